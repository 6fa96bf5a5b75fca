"""The team lead's dashboard: one module per page, rendered from Django templates.

``board`` (sessions by current role), ``session`` (one session, with ``jobs`` and
``deliveries`` for two of its panels), ``roles``, ``audit`` and ``usage`` each hold a
page's view model and its views; ``formatting`` holds what every page shows the same way
(role badges, times, durations) and ``live`` what the websocket consumers
(``sessions_app.consumers``) share with the pages. Access is decided in
``sessions_app.permissions``, filters in ``sessions_app.filters`` and every state change
goes through ``sessions_app.services``.
"""

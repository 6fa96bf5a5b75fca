"""The session page's run panel: the session's orchestrated run as a pipeline of its
template's stages, the stages it executed, its questions, approval gate, risk and budget,
with the buttons the viewer may press; and the views behind those buttons.

The panel is one partial of ``dashboard/session.html`` (``#run``, root ``#run-panel``):
the page, the POST views (``views``, whose answer htmx swaps in) and the session websocket
(``sessions_app.consumers.SessionConsumer``, on ``run.*`` events) render the same one.
``shapes`` holds what the panel shows, ``panel`` builds it from what the selectors read.
"""

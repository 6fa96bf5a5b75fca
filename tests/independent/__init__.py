"""An independent red-team suite for issue 35 ("one view for every door").

Written apart from the builders' own tests, against what landed: ``test_attacks`` tries,
for each class of the issue's Why, variants beyond its examples (the git view, secrets
known by name or by content in odd encodings, two sessions on one workspace, links, MCP
stdio servers, argument limits, registration hygiene); ``test_legitimate`` checks that the
work each role may do still works (code that names credentials, configuration without
secrets, git and grep on real changes). Every call is made the way the job loop makes it:
real sandbox, real git, real MCP stdio servers. A test marked ``xfail(strict=True)`` with a
reason starting "LEAK:" (or "HIDDEN:") documents an attack that succeeds (or legitimate
work that is wrongly hidden) on what landed.
"""

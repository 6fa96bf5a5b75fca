"""Role definitions as YAML, so teams keep them in git.

``document`` is the file's shape (reading, writing, checking a whole document);
``definitions`` exports the database as a document and imports one through
``roles.services``, and loads the shipped defaults into an empty database.
"""

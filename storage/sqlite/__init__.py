"""The database itself: the connection with its pragmas and retries (:mod:`~storage.sqlite.db`),
the tables (:mod:`~storage.sqlite.schema`), numbered migrations, the checks that encode values
for its columns, and the query patterns the record modules share."""

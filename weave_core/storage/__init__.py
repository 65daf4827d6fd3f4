"""The database: engine and transactions, every table, the one lock order, statements built
once and closing writes sent together, migrations."""

"""A person's data: exported (``person export``), erased (``person forget``), and the ledger's
retention (``purge``); see docs/privacy.md. The SQL is :mod:`scheduler.ledger.privacy`."""

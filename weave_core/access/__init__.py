"""Who may act and the record of what they did: namespaces, API tokens and permissions,
and the audit trail."""

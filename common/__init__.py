"""Small shared pieces (errors, parsers, pagination, permissions). Not a Django app; imports no app."""

"""Steps that follow the recipient's replies: the pure decisions (:mod:`.rules`)."""

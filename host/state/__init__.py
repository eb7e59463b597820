"""The host's durable state: the one mutable store and what keeps it across restarts.

``store`` reduces actions, stamps the host-wide ``serverSeq`` and fans them out; ``journal``
(SQLite, WAL) makes them durable, ``journal_upgrade`` converts what older builds wrote;
``sessions`` builds session and chat states, ``chat_summaries`` keeps a session's catalogue of
chats in step with them; ``content`` and ``transcripts`` keep content served by reference and
what providers need back verbatim.
"""

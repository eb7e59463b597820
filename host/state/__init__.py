"""The host's durable state: the one mutable store and what keeps it across restarts.

``store`` is the composition: ``channels`` holds each channel's state (the pure reducers of
``ahp.state``), ``log`` is the port of the ordered log (numbers every envelope with the host-wide
``serverSeq``, makes it durable, replays it, keeps snapshots), ``embedded_log`` its default on the
SQLite journal (``journal``, WAL; ``journal_upgrade`` converts what older builds wrote),
``fanout`` sends to this process's subscribers in each one's protocol version, ``older_turns``
pages a chat's older turns in and out (``turn_pages``: their rows and cursors). ``sessions``
builds session and chat states, ``chat_summaries`` keeps a session's catalogue of chats in step
with them; ``content`` and ``transcripts`` keep content served by reference and what providers
need back verbatim.
"""

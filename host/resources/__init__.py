"""Files and directories the host serves or guards for sessions.

``workdirs`` decides which directories a session may work in; ``watches`` serves resource
watches over them; ``client_resources`` reads what a client publishes (``virtual://`` trees);
``changesets`` records the files a session's tools changed, per turn, and keeps or undoes them.
"""

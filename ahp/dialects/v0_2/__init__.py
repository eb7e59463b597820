"""AHP 0.2.0: the session-centric dialect (one conversation per session, ``session/*`` turn actions).

``state`` holds the 0.2.0 reducers exactly as the official 0.2.0 TypeScript reducers behave.
"""

"""troupe's shared runtime: characters, ids, storage and the agent runtime.

Imports no platform SDK and no vendor SDK.
"""

"""A device held for a session: its locks and lease, retries of idempotent steps, the watchdog's heartbeat, staging,
its controls (CPU affinity, performance mode) and probing."""

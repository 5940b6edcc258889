"""The adb transport: settings (no adbutils), the agent, the adbutils subclasses it needs, the adb
server's own protocol (wire.py: no adbutils) for the discovery of devices a server sees (`adb:SERIAL`,
discover.py) and for a device's presence, tracked as phones come and go (track.py).

Names are imported on first use (orchestrator/base/lazy.py), so reading an inventory with adb devices
never imports adbutils; `from device_agents.adb import AdbAgent` does.
"""

from orchestrator.base.lazy import lazy_api

_API = {
    "AdbAgent": "agent",
    "AdbSettings": "settings",
    "SeenDevice": "discover",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)

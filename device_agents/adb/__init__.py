"""The adb transport: settings (no adbutils), the agent, and the adbutils subclasses it needs.

Names are imported on first use (orchestrator/lazy.py), so reading an inventory with adb devices
never imports adbutils; `from device_agents.adb import AdbAgent` does.
"""

from orchestrator.lazy import lazy_api

_API = {
    "AdbAgent": "agent",
    "AdbSettings": "settings",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)

"""The private key an ssh device logs in with, read once and checked before anything connects.

A key file that is missing, a directory, unreadable, not a private key (random bytes, a `.pub`) or
protected by a passphrase is the user's file: `key_problem` says which in one line, the inventory
refuses it before a job runs (a ConfigError naming the key, exit 2), and a connection never tries it.
"""

from __future__ import annotations

from pathlib import Path

import paramiko

# What paramiko raises for a file it cannot take as a key, whatever is in it.
_KEY_ERRORS = (paramiko.SSHException, ValueError, TypeError, IndexError, UnicodeError, EOFError, AssertionError)


def load_key(path: Path) -> paramiko.PKey:
    """The key in `path`; ValueError saying what is wrong with the file (see `key_problem`)."""
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    try:
        return paramiko.PKey.from_path(path)
    except OSError as exc:
        raise ValueError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except _KEY_ERRORS as exc:
        if isinstance(exc, paramiko.PasswordRequiredException) or "password" in str(exc).lower():
            raise ValueError(f"{path} is protected by a passphrase; etfarm logs in with keys that have none "
                             "(make one with `ssh-keygen -N ''`)") from None
        raise ValueError(f"{path} is not a private key (OpenSSH or PEM) that paramiko can read") from None


def key_problem(path: Path) -> str | None:
    """What is wrong with the key file at `path`, in one line; None when it holds a usable key."""
    try:
        load_key(path)
    except ValueError as exc:
        return str(exc)
    return None

#!/bin/bash
# versions_check.py with the system Python (stdlib only).
exec /usr/bin/python3 "$@"

#!/bin/sh
echo "coverage reports are not available with --config=offline" >&2
exit 1

#!/usr/bin/env bash
# What scripts/versus/run.py needs: Go with Debian's memberlist 0.2.2
# (builds offline), Debian's Serf agent (0.9.4), and nftables. Run as root.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  golang-go golang-github-hashicorp-memberlist-dev golang-github-hashicorp-serf-dev serf nftables iproute2

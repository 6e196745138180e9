#!/bin/bash
# What the service's sandbox must allow and refuse, tried by a process of the
# service's own user: once inside the unit (an ExecStartPost= drop-in, so the
# same mount namespace rules, device policy, address filter and system call
# filter as the daemon) and once outside it, as a control that each refused
# thing is refused by the sandbox and not by file modes. probe.sh compares the
# two. Prints one line an attempt: NAME allowed | NAME refused REASON.
#   sandbox.sh FAR_ADDRESS FAR_PORT NEAR_PORT
far="$1" far_port="$2" near_port="$3"

try() {  # NAME COMMAND...
  local name=$1 err
  shift
  if err="$("$@" 2>&1)"; then
    echo "$name allowed"
  else
    err="${err##*: }"
    echo "$name refused ${err:-exit status $?}"
  fi
}

write() { ( echo probe > "$1/sandbox-probe" && rm -f "$1/sandbox-probe" ); }
open_device() { ( exec 3<>"$1" ); }
connect() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2"; }
bind_port() { python3 -c "import socket; socket.socket(socket.AF_INET, socket.$1).bind(('127.0.0.1', 47001))"; }

try write-state write /var/lib/parlour-satellite
try write-runtime write /run/parlour-satellite
# A folder of the service's own user, outside its state and runtime folders.
try write-elsewhere write /var/lib/parlour-sandbox-probe
# A device anyone may open (0666) that is not ALSA's.
try open-tun open_device /dev/net/tun
try connect-loopback connect 127.0.0.1 "$near_port"
# An address of this machine outside IPAddressAllow=.
try connect-far connect "$far" "$far_port"
# A port: UDP (the siblings' claims) may be bound, TCP may not.
try bind-udp bind_port SOCK_DGRAM
try bind-tcp bind_port SOCK_STREAM
exit 0

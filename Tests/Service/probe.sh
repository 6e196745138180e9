#!/bin/bash
# The checks of the installed package under a real systemd as PID 1. It runs
# as probe.service inside the throwaway bookworm root that scripts/test-service
# made, installed the .deb into with apt, and booted with systemd-nspawn; the
# unit was enabled by the package and started at boot like on a new machine.
# Each check writes one line to /out/results: "ok: NAME (detail)", "FAIL:
# NAME: why", or "skip: NAME: why" (something this kernel cannot do).
# /probe holds these scripts and what the host knows (version, the repo's
# config); /srv/parlour-test-server is the project's test server.
set -uo pipefail
unit=parlour-satellite.service
results=/out/results
: > "$results"
version="$(cat /probe/version)"
secret="probe-token-$RANDOM$RANDOM$RANDOM"

# ---------------------------------------------------------------- helpers

check() {  # NAME FUNCTION: FUNCTION prints its detail last; status 0 ok, 77 skip, else failed
  local name=$1 detail status
  echo "== $name"
  # Not in a subshell: a check may leave what the next one needs (the daemon's pid, a port).
  "$2" > /out/check.txt 2>&1
  status=$?
  cat /out/check.txt
  detail="$(tail -n 1 /out/check.txt)"
  case $status in
    0) echo "ok: $name${detail:+ ($detail)}" ;;
    77) echo "skip: $name: $detail" ;;
    *) echo "FAIL: $name: $detail" ;;
  esac >> "$results"
}

prop() { systemctl show -P "$1" "$unit"; }

wait_until() {  # SECONDS COMMAND...: true once COMMAND succeeds, false after SECONDS
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

mode_of() { stat -c '%a %U:%G' "$1" 2>/dev/null; }

# Journal records as "PRIORITY EVENT MESSAGE" lines (EVENT "-" when the record
# has no PARLOUR_EVENT: a line on stderr, or syslog from a library).
records() {
  journalctl -b -o json --no-pager "$@" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    message = r.get("MESSAGE", "")
    if isinstance(message, list):
        message = bytes(message).decode(errors="replace")
    print(r.get("PRIORITY", "6"), r.get("PARLOUR_EVENT", "-"), message.replace("\n", " "))
'
}

config=/etc/parlour-satellite/satellite.json
# The config the daemon runs on in the checks after the credential's: its test server.
working_config="$(cat "$config")"
set_config() { printf '%s\n' "$1" > "$config"; }

# What parlourctl status --json says, at a path such as server.tokenAccepted.
status_of() {
  parlourctl status --json 2>/dev/null | python3 -c '
import json, sys
value = json.load(sys.stdin)["response"]
for key in sys.argv[1].split("."):
    value = value[key]
print(json.dumps(value))' "$1"
}

# The project's test server (Tests/Server, on Debian's python3-aiohttp), in the background.
server_port=""
start_server() {  # HOST TOKEN LOG: sets server_port once it listens
  local fifo word
  fifo="$(mktemp -u)"
  mkfifo "$fifo"
  python3 /srv/parlour-test-server/parlour_test_server.py --host "$1" --token "$2" \
    >"$fifo" 2>>"$3" </dev/null &
  server_port=""
  read -r -t 30 word server_port <"$fifo" || true
  rm -f "$fifo"
  [[ "$word" == LISTENING && -n "$server_port" ]]
}

# ----------------------------------------------------------- the package

t_verify() {
  systemd-analyze verify --man=no /lib/systemd/system/$unit >/out/verify.log 2>&1 ||
    { cat /out/verify.log; echo "systemd-analyze verify failed"; return 1; }
  if grep "parlour-satellite" /out/verify.log; then echo "systemd-analyze verify complains (above)"; return 1; fi
  echo "systemd-analyze verify has nothing to say"
}

t_security() {
  systemd-analyze security --offline=true /lib/systemd/system/$unit >/out/security.log 2>&1 ||
    { cat /out/security.log; echo "systemd-analyze security failed"; return 1; }
  local score
  score="$(sed -nE 's/.*Overall exposure level for parlour-satellite\.service: ([0-9.]+).*/\1/p' /out/security.log)"
  [[ -n "$score" ]] || { echo "no overall exposure level in the output"; return 1; }
  if awk -v s="$score" 'BEGIN { exit !(s > 2.0) }'; then
    grep "✗" /out/security.log
    echo "exposure $score is above 2.0 (what is exposed is above)"
    return 1
  fi
  echo "exposure $score, at most 2.0"
}

t_settings() {
  local setting
  for setting in "Type=notify" "Restart=on-failure" "RestartPreventExitStatus=78" "WatchdogSec=" "StartLimitBurst=" \
                 "StartLimitIntervalSec=" "User=parlour-satellite" "Group=parlour" "SupplementaryGroups=audio" \
                 "StateDirectoryMode=0700" "RuntimeDirectory=parlour-satellite" "ConfigurationDirectory=parlour-satellite" \
                 "LoadCredential=token:" "SetCredential=token:" "DeviceAllow=char-alsa rw" "IPAddressDeny=any" \
                 "SocketBindAllow=udp" "SocketBindDeny=any"; do
    grep -q "^$setting" /lib/systemd/system/$unit || { echo "the unit has no $setting line"; return 1; }
  done
  echo "the settings the service relies on are there"
}

t_files() {
  local want path got
  for want in "/usr/bin/parlour-satellite 755 root:root" "/usr/bin/parlourctl 755 root:root" \
              "/lib/systemd/system/$unit 644 root:root" "/usr/lib/sysusers.d/parlour-satellite.conf 644 root:root" \
              "$config 644 root:root" "/var/lib/parlour-satellite 700 parlour-satellite:parlour"; do
    path="${want%% *}"
    got="$(mode_of "$path")"
    [[ "$path $got" == "$want" ]] || { echo "$path is ${got:-missing}, expected ${want#* }"; return 1; }
  done
  cmp -s "$config" /probe/satellite.json || { echo "$config differs from the repo's config/satellite.json"; return 1; }
  dpkg-query -W -f='${Conffiles}\n' parlour-satellite | grep -q "$config" || { echo "dpkg does not record $config as a conffile"; return 1; }
  [[ "$(systemctl is-enabled $unit)" == enabled ]] || { echo "the unit is $(systemctl is-enabled $unit), not enabled"; return 1; }
  echo "programs, unit, sysusers file, conffile and a 0700 state folder; the unit is enabled"
}

t_user() {
  local passwd groups
  passwd="$(getent passwd parlour-satellite)" || { echo "there is no parlour-satellite user"; return 1; }
  [[ "$(cut -d: -f6 <<<"$passwd")" == /var/lib/parlour-satellite ]] || { echo "its home is not the state folder: $passwd"; return 1; }
  [[ "$(cut -d: -f7 <<<"$passwd")" == */nologin ]] || { echo "it may log in: $passwd"; return 1; }
  (( $(cut -d: -f3 <<<"$passwd") < 1000 )) || { echo "it is not a system user: $passwd"; return 1; }
  groups=" $(id -nG parlour-satellite) "
  [[ "$groups" == *" audio "* && "$groups" == *" parlour "* ]] || { echo "it is in$groups, not in audio and parlour"; return 1; }
  echo "system user parlour-satellite, home the state folder, no login, in audio and parlour"
}

t_programs() {
  parlour-satellite --help >/dev/null || { echo "parlour-satellite --help failed"; return 1; }
  parlour-satellite --version | grep -qF "$version" || { echo "parlour-satellite --version does not say $version"; return 1; }
  parlourctl --help >/dev/null || { echo "parlourctl --help failed"; return 1; }
  if ldd /usr/bin/parlour-satellite /usr/bin/parlourctl | grep -E "not found"; then
    echo "a program needs a library apt did not install (above)"
    return 1
  fi
  echo "both run, version $version, on the libraries apt installed"
}

# ------------------------------------------------------------ the start

boot_pid=""
t_ready() {
  local state sub status text
  state="$(prop ActiveState)" sub="$(prop SubState)" text="$(prop StatusText)"
  [[ "$state/$sub" == active/running ]] || { systemctl status --no-pager $unit; echo "the unit is $state/$sub after boot"; return 1; }
  [[ "$(prop NRestarts)" == 0 ]] || { echo "it restarted $(prop NRestarts) times since boot"; return 1; }
  boot_pid="$(prop MainPID)"
  [[ -n "$text" ]] || { echo "no STATUS= text"; return 1; }
  status="$(systemctl status --no-pager $unit)"
  echo "$status"
  grep -qF "Status: \"$text\"" <<<"$status" || { echo "systemctl status shows no Status: line"; return 1; }
  # Type=notify is active only after READY=1; a start job that waited for it.
  [[ "$(prop Type)" == notify ]] || { echo "Type is $(prop Type)"; return 1; }
  echo "active (running) after READY=1, Status: \"$text\""
}

# Records of the boot start: the daemon's own records, lines it wrote to
# stderr, libraries' syslog, and the manager's words about the unit.
t_clean_start() {
  [[ -n "$boot_pid" ]] || { echo "the unit did not start at boot"; return 1; }
  local bad
  bad="$(records _PID="$boot_pid" | not_the_room; records _PID=1 UNIT=$unit | awk '$1 <= 4')"
  if [[ -n "$bad" ]]; then
    echo "$bad"
    echo "the clean start wrote $(wc -l <<<"$bad") warnings or stray lines that are not about the room (above)"
    return 1
  fi
  echo "nothing but the room's own warnings ($(records _PID="$boot_pid" | awk '$1 <= 4' | wc -l) about the sound card and the server)"
}

# Records (stdin) of the daemon PID that are warnings or worse, or stray lines,
# and not about the room itself: no sound card here, no server found or
# reachable.
not_the_room() {
  awk '$2 == "microphone" || $2 == "speaker" || $2 == "server" || $2 == "finished" { next }
       $2 == "notice" && /The server cannot be reached/ { next }
       $1 <= 4 || $2 == "-"'
}

# The unit refuses setpriority (@resources): the daemon's tasks run on its main
# thread, and no libdispatch worker starts to ask for a nice value (a refusal
# would be journalled: "Failed to set thread priority").
t_priorities() {
  [[ -n "$boot_pid" ]] || { echo "the unit did not start at boot"; return 1; }
  local lines workers
  lines="$(records _PID="$boot_pid" | grep -c "Failed to set thread priority")"
  ((lines == 0)) || { echo "the daemon journals $lines thread priority lines"; return 1; }
  workers="$(cat /proc/"$boot_pid"/task/*/comm 2>/dev/null | grep -c "qos")"
  ((workers == 0)) || { echo "the daemon has $workers libdispatch worker threads"; return 1; }
  echo "no thread of the daemon asks for a priority, and none is libdispatch's"
}

t_journal() {
  local verbose count
  verbose="$(journalctl -b -u parlour-satellite PARLOUR_EVENT=state -o verbose --no-pager)"
  count="$(grep -c "PARLOUR_EVENT=state" <<<"$verbose")"
  ((count > 0)) || { echo "journalctl -u parlour-satellite PARLOUR_EVENT=state finds nothing"; return 1; }
  grep -q "SYSLOG_IDENTIFIER=parlour-satellite" <<<"$verbose" || { echo "the records carry no SYSLOG_IDENTIFIER=parlour-satellite"; return 1; }
  grep -q "PARLOUR_STATE=" <<<"$verbose" || { echo "the records carry no PARLOUR_STATE"; return 1; }
  echo "journalctl -u parlour-satellite PARLOUR_EVENT=state finds $count native records"
}

t_no_pulse() {
  local pid
  pid="$(prop MainPID)"
  ((pid > 0)) || { echo "the daemon is not running"; return 1; }
  if grep -E "libpulse|libespeak|libpcaudio" /proc/"$pid"/maps | awk '{print $6}' | sort -u | grep .; then
    echo "mapped into the daemon (above)"
    return 1
  fi
  [[ ! -e /var/lib/parlour-satellite/.config ]] || { echo "something made /var/lib/parlour-satellite/.config"; return 1; }
  echo "nothing of PulseAudio or espeak-ng in /proc/$pid/maps"
}

t_socket() {
  local got outsider=0
  got="$(mode_of /run/parlour-satellite/control.sock)"
  [[ "$got" == "660 parlour-satellite:parlour" ]] || { echo "control.sock is ${got:-missing}, expected 660 parlour-satellite:parlour"; return 1; }
  got="$(mode_of /run/parlour-satellite)"
  [[ "$got" == "750 parlour-satellite:parlour" ]] || { echo "/run/parlour-satellite is $got, expected 750 parlour-satellite:parlour"; return 1; }
  parlourctl status >/out/status.log 2>&1 || { cat /out/status.log; echo "parlourctl status as root failed"; return 1; }
  getent passwd probe-member >/dev/null || useradd --system --no-create-home --groups parlour probe-member
  setpriv --reuid=probe-member --regid=probe-member --init-groups parlourctl status >/dev/null 2>&1 ||
    { echo "parlourctl status as a member of group parlour failed"; return 1; }
  setpriv --reuid=65534 --regid=65534 --clear-groups parlourctl status >/dev/null 2>&1 || outsider=$?
  ((outsider == 1)) || { echo "parlourctl status as nobody exited $outsider, expected 1 (permission_denied)"; return 1; }
  echo "control.sock 0660 group parlour in a 0750 folder: root and group parlour get status, nobody gets permission_denied"
}

# ------------------------------------------------------ the credential

t_credential() {
  local port
  start_server 127.0.0.1 "$secret" /out/server.log || { echo "the test server did not start (see server.log)"; return 1; }
  port=$server_port
  # A wrong token in the state folder: the credential must win over it.
  printf 'not-the-token\n' | parlourctl token set >/dev/null || { echo "parlourctl token set failed"; return 1; }
  [[ "$(mode_of /var/lib/parlour-satellite/token)" == "600 parlour-satellite:parlour" ]] ||
    { echo "<state>/token is $(mode_of /var/lib/parlour-satellite/token), expected 600 parlour-satellite:parlour"; return 1; }
  working_config="{\"server\": {\"url\": \"http://127.0.0.1:$port\"}}"
  set_config "$working_config"
  ( umask 0077; printf '%s\n' "$secret" > /etc/parlour-satellite/token )
  systemctl restart $unit || { echo "the restart with the credential failed"; return 1; }
  accepted() { [[ "$(status_of server.tokenAccepted)" == true ]]; }
  wait_until 30 accepted || { parlourctl status; echo "the server never accepted the token (status above)"; return 1; }
  curl_log="$(python3 -c "
import json, urllib.request
log = json.load(urllib.request.urlopen('http://127.0.0.1:$port/_test/log?token=$secret'))
print(sum(1 for r in log['requests'] if r.get('tokenOk')))")"
  ((curl_log > 0)) || { echo "the test server logged no request with the right token"; return 1; }
  [[ -f /run/credentials/$unit/token ]] || { echo "no credential in /run/credentials/$unit"; return 1; }
  if journalctl -b --no-pager -o verbose | grep -qF "$secret"; then echo "the token is in the journal"; return 1; fi
  echo "the credential's token reached the test server ($curl_log requests with it), not the state folder's; not in the journal"
}

# -------------------------------------------------------- the sandbox

# sandbox.sh's attempts as the service's user, outside the unit and inside it.
outside="" inside="" far=198.51.100.7 far_port=""
t_sandbox_run() {
  local near
  # An address of this machine (the container has a network of its own) that IPAddressAllow= leaves out.
  ip address add "$far/32" dev lo || { echo "could not add $far to lo"; return 1; }
  near="$(status_of server.url | tr -d '"')"
  near="${near##*:}"
  start_server "$far" "$secret" /out/server-far.log || { echo "the far test server did not start"; return 1; }
  far_port=$server_port
  install -d -o parlour-satellite -g parlour -m 0700 /var/lib/parlour-sandbox-probe
  # As udev makes it on a Debian machine; systemd-nspawn makes it 0600.
  chmod 0666 /dev/net/tun
  outside="$(setpriv --reuid=parlour-satellite --regid=parlour --init-groups bash /probe/sandbox.sh "$far" "$far_port" "$near")"
  mkdir -p /run/systemd/system/$unit.d
  printf '[Service]\nExecStartPost=/bin/bash -c %s\n' \
    "'bash /probe/sandbox.sh $far $far_port $near > \"\$RUNTIME_DIRECTORY/sandbox.txt\"'" \
    > /run/systemd/system/$unit.d/sandbox-probe.conf
  systemctl daemon-reload
  systemctl restart $unit || { echo "the restart with the sandbox probe failed"; return 1; }
  inside="$(cat /run/parlour-satellite/sandbox.txt)"
  rm -f /run/systemd/system/$unit.d/sandbox-probe.conf
  systemctl daemon-reload
  echo "outside the unit:"; echo "$outside"; echo "inside the unit:"; echo "$inside"
  [[ -n "$inside" && -n "$outside" ]] || { echo "sandbox.sh printed nothing"; return 1; }
  echo "the service's user tried each thing outside the unit and inside it"
}

verdict() { awk -v n="$1" '$1 == n { $1 = ""; sub(/^ /, ""); print }' <<<"$2"; }

expect() {  # NAME OUTSIDE INSIDE: the verdicts sandbox.sh must give
  local o i
  o="$(verdict "$1" "$outside")" i="$(verdict "$1" "$inside")"
  [[ "$o" == "$2"* ]] || { echo "$1 is \"$o\" for the service's user outside the unit, so the check would prove nothing"; return 1; }
  [[ "$i" == "$3"* ]] || { echo "$1 is \"$i\" inside the unit, expected $3"; return 1; }
}

t_sandbox_files() {
  expect write-state allowed allowed && expect write-runtime allowed allowed && expect write-elsewhere allowed refused || return 1
  echo "writes its state and runtime folders; a folder of its own user elsewhere: $(verdict write-elsewhere "$inside")"
}

# Whether this manager can enforce a setting at all: a transient unit of the
# service's user with only that setting tries the same thing.
enforced() {  # PROPERTY COMMAND
  ! systemd-run --quiet --wait --collect -p User=parlour-satellite -p "$1" bash -c "$2" 2>/dev/null
}

t_sandbox_devices() {
  if ! expect open-tun allowed refused; then
    if [[ "$(verdict open-tun "$inside")" == allowed ]] && ! enforced DevicePolicy=closed 'exec 3<>/dev/net/tun'; then
      echo "DevicePolicy= is not enforced by systemd here: a transient unit with DevicePolicy=closed opens /dev/net/tun too (no device cgroup for it in this container)"
      return 77
    fi
    return 1
  fi
  echo "/dev/net/tun (0666, not ALSA): $(verdict open-tun "$inside")"
}

t_sandbox_addresses() {
  expect connect-loopback allowed allowed || return 1
  if ! expect connect-far allowed refused; then
    if [[ "$(verdict connect-far "$inside")" == allowed ]] && ! enforced IPAddressDeny=any "exec 3<>/dev/tcp/$far/$far_port"; then
      echo "IPAddressAllow= is not enforced by systemd here: a transient unit with IPAddressDeny=any reaches $far too (no cgroup BPF for it in this kernel or container)"
      return 77
    fi
    return 1
  fi
  echo "loopback reached; $far (outside IPAddressAllow=): $(verdict connect-far "$inside")"
}

t_sandbox_ports() {
  expect bind-udp allowed allowed || return 1
  if ! expect bind-tcp allowed refused; then
    if [[ "$(verdict bind-tcp "$inside")" == allowed ]] \
      && ! enforced SocketBindDeny=any "python3 -c \"import socket; socket.socket().bind(('127.0.0.1', 47999))\""; then
      echo "SocketBindDeny= is not enforced by systemd here: a transient unit with SocketBindDeny=any binds a TCP port too (no cgroup BPF for it in this kernel or container)"
      return 77
    fi
    return 1
  fi
  echo "a UDP port (the siblings' claims) bound; a TCP port: $(verdict bind-tcp "$inside")"
}

# ------------------------------------------------------ the offline notice

# With the house out of reach, the satellite says so itself: espeak-ng is
# opened for that (under the unit's sandbox) and closed again.
t_offline_notice() {
  local since pid result bad
  set_config '{"server": {"url": "http://127.0.0.1:9"}}'
  systemctl restart $unit || { echo "the restart failed"; return 1; }
  pid="$(prop MainPID)"
  since="$(date '+%Y-%m-%d %H:%M:%S')"
  result="$(parlourctl ask --json "is the oven on" 2>&1)"
  grep -q '"server_unreachable"' <<<"$result" || { echo "ask gave: $result"; return 1; }
  records _PID="$pid" --since "$since" | grep -q "The offline notice is ready" ||
    { records _PID="$pid" --since "$since"; echo "the journal does not say the notice was spoken (above)"; return 1; }
  bad="$(records _PID="$pid" --since "$since" | not_the_room)"
  [[ -z "$bad" ]] || { echo "$bad"; echo "saying the notice journaled what is not about the room (above)"; return 1; }
  [[ ! -e /var/lib/parlour-satellite/.config ]] || { echo "something made /var/lib/parlour-satellite/.config"; return 1; }
  local left
  left="$(grep -E "libespeak|libpulse|libpcaudio" /proc/"$pid"/maps | awk '{print $6}' | sort -u | xargs -r -n1 basename | tr '\n' ' ')"
  set_config "$working_config"
  systemctl restart $unit
  echo "server_unreachable; espeak-ng spoke the notice in the sandbox and was closed again${left:+ (still mapped: $left)}"
}

# ------------------------------------------------------ the local wake word

# wake "local" under the unit's own sandbox (MemoryDenyWriteExecute, the
# system call filter, ProtectSystem=strict): TensorFlow Lite's C library is
# loaded and runs there. The root has no sound card: /etc/asound.conf (made
# by scripts/test-service) gives a paced file-plugin microphone that says
# "okay nabu" three times (/probe/okay-nabu.raw) and a paced speaker.
engine=/usr/lib/parlour-satellite
wake_pid=""

t_wake_files() {
  local file
  for file in lib/libtensorflowlite_c.so models/{okay_nabu,hey_jarvis,alexa,hey_mycroft}.{json,tflite}; do
    [[ "$(mode_of "$engine/$file")" == "644 root:root" && -s "$engine/$file" ]] ||
      { echo "$engine/$file is $(mode_of "$engine/$file" || true), expected a 644 root:root file"; return 1; }
  done
  dpkg -S "$engine/lib/libtensorflowlite_c.so" >/dev/null 2>&1 || { echo "dpkg does not own the library"; return 1; }
  echo "$engine/lib/libtensorflowlite_c.so and the four models' .json and .tflite, owned by the package"
}

t_wake_ready() {
  [[ -r /etc/asound.conf && -r /probe/okay-nabu.raw ]] || { echo "the probe has no microphone (/etc/asound.conf, /probe/okay-nabu.raw)"; return 1; }
  set_config "$(python3 -c '
import json, sys
c = json.loads(sys.argv[1])
c["wake"] = "local"
c["audio"] = {"input": "probemic", "output": "probespeaker"}
print(json.dumps(c))' "$working_config")"
  cat "$config"
  systemctl restart $unit || { systemctl status --no-pager $unit; echo "the restart with wake \"local\" failed (never READY=1)"; return 1; }
  [[ "$(prop ActiveState)/$(prop SubState)" == active/running ]] || { echo "the unit is $(prop ActiveState)/$(prop SubState)"; return 1; }
  wake_pid="$(prop MainPID)"
  parlourctl status --json
  [[ "$(status_of wake)" == '"local"' ]] || { echo "status says wake $(status_of wake)"; return 1; }
  [[ "$(status_of wakeWord.ok)" == true ]] ||
    { echo "status says wakeWord.ok $(status_of wakeWord.ok), error $(status_of wakeWord.error)"; return 1; }
  echo "READY=1 with wake \"local\"; status: wakeWord $(status_of wakeWord | tr -d ' ')"
}

t_wake_journal() {
  [[ -n "$wake_pid" ]] || { echo "the daemon did not start with wake \"local\""; return 1; }
  local all bad
  all="$(records _PID="$wake_pid")"
  echo "$all"
  # TensorFlow Lite writes to stderr ("ERROR: ...", "INFO: ..."); a system
  # call the filter refuses comes back as EPERM (SystemCallErrorNumber=).
  bad="$(grep -iE "seccomp|EPERM|not permitted|^[0-9] - .*ERROR|tensorflow.*(error|fail)|tflite.*(error|fail)|xnnpack.*(error|fail)" <<<"$all")"
  [[ -z "$bad" ]] || { echo "$bad"; echo "the journal has these lines (above)"; return 1; }
  if journalctl -b -k --no-pager 2>/dev/null | grep -E "audit.*(SECCOMP|seccomp).*pid=$wake_pid"; then
    echo "the kernel logged a seccomp action for the daemon (above)"; return 1
  fi
  echo "$(wc -l <<<"$all") records of the daemon, none of seccomp, EPERM or an error from TensorFlow Lite"
}

t_wake_heard() {
  [[ -n "$wake_pid" ]] || { echo "the daemon did not start with wake \"local\""; return 1; }
  heard() { records _PID="$wake_pid" | awk '$2 == "wake"' | grep -q .; }
  wait_until 40 heard || { records _PID="$wake_pid"; echo "no PARLOUR_EVENT=wake record within 40 s of the start (records above)"; return 1; }
  echo "a wake record: $(records _PID="$wake_pid" | awk '$2 == "wake"' | head -n 1 | cut -d' ' -f3-)"
}

t_unmapped() {
  [[ -n "$wake_pid" ]] || { echo "the daemon did not start with wake \"local\""; return 1; }
  unmapped() { journalctl -b -o json --no-pager _PID="$wake_pid" MESSAGE="Code unmapped." | grep -q .; }
  wait_until 30 unmapped || { records _PID="$wake_pid"; echo "no \"Code unmapped.\" record within 30 s of the start (records above)"; return 1; }
  local fields bytes refused before after
  fields="$(journalctl -b -o json --no-pager _PID="$wake_pid" MESSAGE="Code unmapped." | head -n 1 | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(*(r.get("PARLOUR_" + k, "?") for k in ("BYTES", "REFUSED", "RSS_FILE_BEFORE_KB", "RSS_FILE_AFTER_KB")))')"
  read -r bytes refused before after <<<"$fields"
  [[ "$refused" == 0 && "$bytes" =~ ^[1-9][0-9]*$ ]] ||
    { echo "the record says bytes=$bytes refused=$refused: the unit's user or filter stopped it"; return 1; }
  [[ "$before" =~ ^[0-9]+$ && "$after" =~ ^[0-9]+$ ]] && ((after < before - 1024)) ||
    { echo "RssFile $before kB before the round, $after kB after: nothing was unmapped"; return 1; }
  echo "as the unit's user and under its filter: $((bytes >> 20)) MiB of code advised, RssFile $((before / 1024)) -> $((after / 1024)) MiB"
}

t_wake_maps() {
  [[ -n "$wake_pid" ]] || { echo "the daemon did not start with wake \"local\""; return 1; }
  grep -q "$engine/lib/libtensorflowlite_c.so" /proc/"$wake_pid"/maps ||
    { echo "the daemon with wake \"local\" has not mapped libtensorflowlite_c.so"; return 1; }
  set_config "$working_config"
  systemctl restart $unit || { echo "the restart with wake \"server\" failed"; return 1; }
  local pid
  pid="$(prop MainPID)"
  [[ "$(status_of wake)" == '"server"' ]] || { echo "status says wake $(status_of wake) after the restart"; return 1; }
  if grep libtensorflowlite /proc/"$pid"/maps; then echo "the daemon with wake \"server\" maps TensorFlow Lite (above)"; return 1; fi
  echo "mapped with wake \"local\" (pid $wake_pid), not with wake \"server\" (pid $pid)"
}

# ----------------------------------------------------- stop, watchdog, restarts

t_stop() {
  systemctl is-active -q $unit || systemctl start $unit
  systemctl stop $unit || { echo "systemctl stop failed"; return 1; }
  local result code status
  result="$(prop Result)" code="$(prop ExecMainCode)" status="$(prop ExecMainStatus)"
  # Result=timeout would mean TimeoutStopSec ran out and SIGKILL ended it; code 1 is CLD_EXITED.
  [[ "$result" == success && "$code" == 1 && "$status" == 0 ]] ||
    { echo "after stop: Result=$result ExecMainCode=$code ExecMainStatus=$status, expected success, exited, 0"; return 1; }
  echo "ended by SIGTERM, exit 0, within TimeoutStopSec=$(prop TimeoutStopUSec)"
}

t_watchdog() {
  mkdir -p /run/systemd/system/$unit.d
  printf '[Service]\nWatchdogSec=3\n' > /run/systemd/system/$unit.d/watchdog-probe.conf
  systemctl daemon-reload
  systemctl start $unit || { echo "the start failed"; return 1; }
  local pid restarts since
  pid="$(prop MainPID)" restarts="$(prop NRestarts)"
  since="$(date '+%Y-%m-%d %H:%M:%S')"
  # A few watchdog periods running first: it must not be killed while it answers.
  sleep 7
  [[ "$(prop MainPID)" == "$pid" ]] || { echo "it was restarted while it still answered"; return 1; }
  kill -STOP "$pid"
  restarted() { [[ "$(prop MainPID)" != "$pid" && "$(prop MainPID)" != 0 && "$(prop ActiveState)" == active ]]; }
  wait_until 60 restarted || { kill -CONT "$pid" 2>/dev/null; echo "not restarted within 60 s of SIGSTOP (state $(prop ActiveState)/$(prop SubState))"; return 1; }
  rm -f /run/systemd/system/$unit.d/watchdog-probe.conf
  systemctl daemon-reload
  journalctl -u parlour-satellite --since "$since" --no-pager | grep -q "Watchdog timeout" ||
    { echo "the journal has no watchdog timeout"; return 1; }
  (( $(prop NRestarts) == restarts + 1 )) || { echo "NRestarts went from $restarts to $(prop NRestarts)"; return 1; }
  echo "stopped with SIGSTOP, killed on the watchdog timeout and restarted (pid $pid -> $(prop MainPID))"
}

# A stuck thread (the daemon's test hook stops it at its first turn after the
# third WATCHDOG=1): the watchdog stops, the journal names the thread, and
# systemd kills and restarts the daemon. The drop-in alone sets the hook.
t_stalled_thread() {
  local thread=$1 pid restarts since counted
  mkdir -p /run/systemd/system/$unit.d
  printf '[Service]\nWatchdogSec=3\nEnvironment=PARLOUR_SATELLITE_TEST_STALL=%s PARLOUR_SATELLITE_TEST_TURN_S=2\n' "$thread" \
    > /run/systemd/system/$unit.d/stall-probe.conf
  systemctl daemon-reload
  systemctl reset-failed $unit  # the start limit: each check starts it twice and systemd once
  systemctl restart $unit || { echo "the start failed"; return 1; }
  pid="$(prop MainPID)" restarts="$(prop NRestarts)"
  since="$(date '+%Y-%m-%d %H:%M:%S')"
  restarted() { [[ "$(prop MainPID)" != "$pid" && "$(prop MainPID)" != 0 && "$(prop ActiveState)" == active ]]; }
  wait_until 60 restarted || { echo "not restarted within 60 s (state $(prop ActiveState)/$(prop SubState))"; return 1; }
  counted="$(prop NRestarts)"
  rm -f /run/systemd/system/$unit.d/stall-probe.conf
  systemctl daemon-reload
  systemctl reset-failed $unit
  systemctl restart $unit
  journalctl -u parlour-satellite --since "$since" --no-pager > /out/stall-$thread.log
  grep -q "The $thread thread has not turned for" /out/stall-$thread.log ||
    { echo "the journal does not name the $thread thread"; return 1; }
  grep -q "Watchdog timeout" /out/stall-$thread.log || { echo "the journal has no watchdog timeout"; return 1; }
  (( counted > restarts )) || { echo "NRestarts went from $restarts to $counted"; return 1; }
  grep -m 1 "The $thread thread has not turned for" /out/stall-$thread.log | sed 's/^.*\]: //'
  echo "the journal named the stuck $thread thread, systemd's watchdog killed it and restarted it (pid $pid -> NRestarts $counted)"
}
t_stalled_audio() { t_stalled_thread audio; }
t_stalled_main() { t_stalled_thread main; }

t_bad_config() {
  set_config '{"server": {"url": 5}}'
  if systemctl restart $unit 2>/dev/null; then echo "the unit started with a bad config"; return 1; fi
  local state sub status
  state="$(prop ActiveState)" sub="$(prop SubState)" status="$(prop ExecMainStatus)"
  # A restart on the way would show as activating/auto-restart; failed/failed means none is scheduled.
  [[ "$status" == 78 ]] || { echo "it exited $status, expected 78"; return 1; }
  [[ "$state/$sub" == failed/failed ]] || { echo "the unit is $state/$sub, expected failed/failed (no restart)"; return 1; }
  # A start by hand sets NRestarts to 0; an automatic restart would count 1.
  [[ "$(prop NRestarts)" == 0 ]] || { echo "it was restarted $(prop NRestarts) times"; return 1; }
  journalctl -u parlour-satellite -n 20 --no-pager | grep -q "server.url" || { echo "the journal does not name server.url"; return 1; }
  echo "exit 78, failed, not restarted; the journal names server.url"
}

t_start_limit() {
  local burst interval i
  burst="$(prop StartLimitBurst)" interval="$(prop StartLimitIntervalUSec)"
  systemctl reset-failed $unit
  [[ "$(prop ActiveState)" == inactive ]] || { echo "reset-failed left it $(prop ActiveState)"; return 1; }
  # Each start that runs the daemon has a new invocation ID; a start the limit refuses has none.
  local id since
  since="$(date '+%Y-%m-%d %H:%M:%S')"
  for ((i = 1; i <= burst; i++)); do
    id="$(prop InvocationID)"
    systemctl start $unit 2>/dev/null
    [[ "$(prop InvocationID)" != "$id" && "$(prop ExecMainStatus)" == 78 ]] ||
      { echo "start $i of $burst did not run the daemon to its exit 78"; return 1; }
  done
  id="$(prop InvocationID)"
  set_config "$working_config"
  if systemctl start $unit 2>/dev/null; then echo "start $((burst + 1)) within $interval succeeded"; return 1; fi
  [[ "$(prop InvocationID)" == "$id" ]] || { echo "start $((burst + 1)) ran the daemon"; return 1; }
  journalctl -u parlour-satellite --since "$since" --no-pager | grep -q "Start request repeated too quickly" ||
    { echo "the journal does not say the start was refused"; return 1; }
  systemctl reset-failed $unit
  systemctl start $unit || { echo "the start after reset-failed failed"; return 1; }
  [[ "$(prop ActiveState)" == active ]] || { echo "after reset-failed and start it is $(prop ActiveState)"; return 1; }
  echo "$burst failed starts in $interval, then even a good config is refused until reset-failed, then it starts"
}

# --------------------------------------------------- reinstall, remove, purge

t_reinstall() {
  set_config "$working_config"
  DEBIAN_FRONTEND=noninteractive dpkg -i /var/cache/parlour-test/parlour-satellite.deb >/out/reinstall.log 2>&1 ||
    { cat /out/reinstall.log; echo "installing over itself failed"; return 1; }
  [[ -f /var/lib/parlour-satellite/token ]] || { echo "installing over itself lost <state>/token"; return 1; }
  [[ "$(prop ActiveState)" == active ]] || { echo "after the upgrade the service is $(prop ActiveState)"; return 1; }
  echo "installs over itself, keeps the state, and the service runs again"
}

t_remove() {
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq parlour-satellite >/out/remove.log 2>&1 ||
    { cat /out/remove.log; echo "apt-get remove failed"; return 1; }
  local path
  for path in /usr/bin/parlour-satellite /usr/bin/parlourctl /lib/systemd/system/$unit; do
    [[ ! -e "$path" ]] || { echo "$path is still there after remove"; return 1; }
  done
  [[ -f "$config" ]] || { echo "remove took the conffile"; return 1; }
  [[ -f /var/lib/parlour-satellite/token ]] || { echo "remove took the state folder"; return 1; }
  pgrep -x parlour-satellite >/dev/null && { echo "the daemon still runs after remove"; return 1; }
  echo "remove stops the daemon, takes the programs and the unit, keeps the config and the state"
}

t_purge() {
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq parlour-satellite >/out/purge.log 2>&1 ||
    { cat /out/purge.log; echo "apt-get purge failed"; return 1; }
  local path
  for path in /etc/parlour-satellite /var/lib/parlour-satellite /etc/systemd/system/multi-user.target.wants/$unit; do
    [[ ! -e "$path" && ! -L "$path" ]] || { echo "$path is still there after purge"; return 1; }
  done
  local known
  known="$(dpkg-query -W -f='${Status}' parlour-satellite 2>/dev/null)"
  [[ -z "$known" || "$known" == *not-installed* ]] || { echo "dpkg still knows it: $known"; return 1; }
  echo "purge takes the config, the token beside it, the state folder and the enablement"
}

check "systemd-analyze verify" t_verify
check "security score" t_security
check "unit settings" t_settings
check "package files" t_files
check "system user" t_user
check "programs" t_programs
check "READY=1 and STATUS=" t_ready
check "clean start" t_clean_start
check "thread priorities" t_priorities
check "native journal records" t_journal
check "no PulseAudio in the daemon" t_no_pulse
check "control socket" t_socket
check "token as credential" t_credential
check "sandbox: the service's user outside and inside the unit" t_sandbox_run
check "sandbox: files" t_sandbox_files
check "sandbox: devices" t_sandbox_devices
check "sandbox: addresses" t_sandbox_addresses
check "sandbox: ports" t_sandbox_ports
check "offline notice" t_offline_notice
check "wake word: the engine's files" t_wake_files
check "wake word local: READY=1 and wakeWord.ok" t_wake_ready
check "wake word local: \"okay nabu\" at the microphone gives a wake record" t_wake_heard
check "start-up's code unmapped, as the unit's user" t_unmapped
check "wake word local: no seccomp, EPERM or TensorFlow Lite error in the journal" t_wake_journal
check "wake word: libtensorflowlite_c.so mapped only with wake local" t_wake_maps
check "systemctl stop" t_stop
check "watchdog" t_watchdog
check "watchdog: a stuck audio thread" t_stalled_audio
check "watchdog: a stuck main loop" t_stalled_main
check "bad config" t_bad_config
check "start limit and reset-failed" t_start_limit
check "reinstall" t_reinstall
check "remove" t_remove
check "purge" t_purge
echo done >> /out/finished

#!/bin/sh
# A parlour-satellite state hook that shows the state on an LED through sysfs.
#
#   "hooks": {"onState": "/usr/share/parlour-satellite/hooks/led.sh led0"}
#
# The argument names the LED: a folder of /sys/class/leds (`ls /sys/class/leds`
# lists them; led0 is the green one on a Raspberry Pi). PARLOUR_LED_ROOT stands
# in for /sys/class/leds, to try the script on a folder of plain files.
#
# Those files belong to root, and the daemon runs as parlour-satellite: let the
# parlour group write them with 99-parlour-leds.rules (beside this script).
#
#   state      the LED
#   listening  on
#   thinking   quick blink (100 ms on, 100 ms off)
#   speaking   steady blink (250 ms on, 250 ms off)
#   offline    slow blink (1 s on, 1 s off): the house cannot be reached
#   unpaired   a blip every 2 s: no server yet
#   muted      a short blip every 3 s
#   starting   slow blink
#   idle       off
set -eu

led="${1:-led0}"
dir="${PARLOUR_LED_ROOT:-/sys/class/leds}/$led"
if [ ! -d "$dir" ]; then
    echo "led.sh: there is no LED $dir; ls ${PARLOUR_LED_ROOT:-/sys/class/leds} lists them" >&2
    exit 1
fi

# Full brightness is the LED's own maximum (1 for most GPIO LEDs).
max=1
[ -r "$dir/max_brightness" ] && max=$(cat "$dir/max_brightness")

steady() {  # on | off
    echo none > "$dir/trigger"
    if [ "$1" = on ]; then echo "$max" > "$dir/brightness"; else echo 0 > "$dir/brightness"; fi
}

blink() {  # milliseconds on, milliseconds off
    # The kernel's timer trigger blinks the LED by itself: nothing keeps running here.
    echo timer > "$dir/trigger"
    # The kernel makes delay_on and delay_off anew for each timer trigger, owned by root;
    # udev (99-parlour-leds.rules) hands them to the parlour group a moment later.
    tries=0
    while [ ! -w "$dir/delay_on" ] && [ "$tries" -lt 20 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    echo "$1" > "$dir/delay_on"
    echo "$2" > "$dir/delay_off"
}

case "${PARLOUR_STATE:-}" in
    listening) steady on ;;
    thinking) blink 100 100 ;;
    speaking) blink 250 250 ;;
    offline) blink 1000 1000 ;;
    unpaired) blink 100 1900 ;;
    muted) blink 50 2950 ;;
    starting) blink 1000 1000 ;;
    *) steady off ;;
esac

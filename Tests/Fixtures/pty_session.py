"""Runs a program on a pseudo-terminal and talks to it like a person would.

    pty_session.py SCRIPT -- PROGRAM [ARG...]

SCRIPT is a JSON list of steps, done in order:
    {"expect": "TEXT"}   wait until TEXT appears in the output after the last match
    {"send": "TEXT"}     type TEXT (a newline is not added)
Then it waits for the program to end. On standard output it prints one JSON
object: {"status": EXIT, "transcript": "everything the terminal showed"}, or
with "error" when a step timed out (30 s) or the program ended first.

The program is the session leader of the terminal, so isatty(0) is true,
/dev/tty is this terminal, and turning echo off really hides what is typed.
"""

import json
import os
import pty
import select
import sys
import time

TIMEOUT = 30.0


def main() -> int:
    separator = sys.argv.index("--")
    steps = json.loads(sys.argv[1])
    command = sys.argv[separator + 1:]

    pid, master = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)

    transcript = b""
    seen = 0  # where the next expect starts looking

    def read(deadline: float) -> bool:
        """Reads what is there (waiting until deadline); False once the program closed the terminal."""
        nonlocal transcript
        remaining = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([master], [], [], remaining)
        if not ready:
            return True
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed its side
            return False
        if not data:
            return False
        transcript += data
        return True

    def finish(error: str | None) -> int:
        _, code = os.waitpid(pid, 0)
        out = {"status": os.waitstatus_to_exitcode(code), "transcript": transcript.decode("utf-8", "replace")}
        if error:
            out["error"] = error
        print(json.dumps(out))
        return 0 if error is None else 1

    for step in steps:
        if "send" in step:
            os.write(master, step["send"].encode())
            continue
        wanted = step["expect"].encode()
        deadline = time.monotonic() + TIMEOUT
        while True:
            found = transcript.find(wanted, seen)
            if found >= 0:
                seen = found + len(wanted)
                break
            if time.monotonic() >= deadline:
                os.kill(pid, 9)
                return finish(f"timed out waiting for {step['expect']!r}")
            if not read(deadline):
                return finish(f"the program ended while waiting for {step['expect']!r}")

    deadline = time.monotonic() + TIMEOUT
    while read(deadline):
        if time.monotonic() >= deadline:
            os.kill(pid, 9)
            return finish("timed out waiting for the program to end")
    return finish(None)


if __name__ == "__main__":
    sys.exit(main())

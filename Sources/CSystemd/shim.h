// libsystemd for Swift: sd_notify and the journal. sd_journal_send is variadic,
// which Swift cannot call, so the journal is written with sd_journal_sendv.
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

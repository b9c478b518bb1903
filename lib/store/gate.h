/*
** lib/store/gate.h - readers and checkpoints of one store: the gate.
**
** A reader builds its view of a store from two files, the .h5 file (its
** superblock names the last checkpoint) and the log; a writer's checkpoint
** changes both (it rewrites the superblock, then empties the log), and
** optimize replaces the .h5 file.  Every such change is consistent on its
** own, but a reader that read one file before a change and the other after
** it, or a torn part of one, would see a state that never existed: records
** missing or an error.  The gate makes the two things exclusive: a reader
** loads its view (opens the .h5 file, reads the log) inside the gate's read
** side, a writer changes the superblock, empties the log or renames a new
** file into place inside its write side (docs/FORMAT.md, "Readers and
** checkpoints").
**
** The gate is two byte-range locks on the log file, past any byte a log
** can hold: open file description locks (F_OFD_SETLK), which, unlike POSIX
** record locks, are held per open file (so threads of one process exclude
** each other too) and, unlike the writer's flock on the same file, never
** conflict with it.  Byte P ("pending") keeps new readers out while a
** writer waits, so a stream of readers cannot starve it; byte R
** ("readers") is shared by the readers loading a view.
**
**   reader: P shared, R shared, P released ... load ... R released
**   writer: P exclusive, R exclusive ... change ... both released
**
** Nobody ever waits while holding R, so there is no deadlock; a lock dies
** with its process.  Waits are bounded: a lock is retried every 100 us to
** 2 ms for at most GATE_WAIT_MS (a process stopped while holding one
** cannot hang another): a reader then loads without the gate, relying on
** the checks of the store (the log's generation read before and after), a
** writer gives up (GATE_EBUSY) and its checkpoint fails as busy, the log
** keeping every commit.
**
** Where open file description locks do not exist (not Linux), or with
** H5MEM_NO_GATE=1 in the environment (for tests), every call returns
** GATE_NONE and readers rely on those checks alone.
*/
#ifndef H5MEM_STORE_GATE_H
#define H5MEM_STORE_GATE_H

#include "util/err.h"

enum {
  GATE_OK = 0,
  GATE_NONE = 1,   /* no gate on this system or file: go on without it */
  GATE_EBUSY = UTIL_EBUSY, /* not obtained within GATE_WAIT_MS */
  GATE_EIO = UTIL_EIO      /* the lock call failed (errno says why) */
};

#define GATE_WAIT_MS 10000

/* fd: the log file, opened for reading (read side) or reading and writing
** (write side).  The read side is held from gate_read_begin to
** gate_read_end, the write side from gate_write_begin to gate_write_end;
** the *_end calls take what the *_begin call returned and do nothing unless
** it was GATE_OK. */
int gate_read_begin(int fd);
void gate_read_end(int fd, int began);
int gate_write_begin(int fd);
void gate_write_end(int fd, int began);

#endif

/*
** lib/store/wal.h - the write-ahead log beside a store file (agent.h5-wal).
**
** The store appends one frame per change and makes it durable before the
** change counts as committed; later it applies the frames to the HDF5 file
** (a checkpoint) and empties the log with wal_reset().  After a crash,
** wal_open() finds the frames that were completely written and wal_replay()
** hands them back in order.
**
** On disk (all integers little-endian):
**
**   header, 64 bytes:
**      0  magic       "H5MEMWAL" (8 bytes)
**      8  version     u32, 1
**     12  hdr_size    u32, 64
**     16  store_id    16 bytes naming the store the log belongs to
**     32  base_seq    u64, seq of the first frame that may follow (1 ..
**                     WAL_MAX_SEQ)
**     40  salt        u64, new at every reset (see below)
**     48  reserved    8 bytes, 0
**     56  hdr_sum     u64, XXH64(bytes 0..55, seed 0)
**   A later version keeps magic, version and hdr_size where they are and
**   its checksum, over the rest of its header, in the header's last 8
**   bytes; such a log is refused (WAL_EINVAL), not mistaken for a corrupt
**   one.
**
**   then frames, one after the other:
**      0  magic       u32, 0x464c4157 ("WALF")
**      4  len         u32, payload bytes, at most WAL_MAX_FRAME
**      8  seq         u64, the previous frame's seq + 1 (base_seq first)
**     16  payload     len bytes
**   16+len frame_sum  u64, XXH64(bytes 0..16+len of the frame, seed = chain)
**   where chain is hdr_sum for the first frame and the previous frame's
**   frame_sum after that.  Through hdr_sum every frame's checksum depends
**   on store_id, base_seq and salt, and on every frame before it: bytes
**   left over from before a reset, from another log, or copied from
**   elsewhere in this one never validate.
**
** The log is opened only as a regular file and never through a symbolic
** link (O_NOFOLLOW); a new one is created exclusively (O_EXCL).
**
** The valid prefix is the frames up to the first one that is cut short,
** has a bad magic or length, a seq that is not the previous + 1, or a
** checksum that does not match.  A writer cuts the file back to the valid
** prefix when it opens it, and appends only at its end: frames are never
** overwritten in place.  The header is rewritten in place by wal_reset()
** only (64 bytes at offset 0, synced before the frames are cut away).
**
** Memory: wal_open() and wal_replay() read one frame at a time into a
** buffer the size of the largest frame; appends write the caller's payload
** without copying it.
**
** A wal is used by one thread at a time, and one writer may have a log
** open at a time (the store's lock sees to that); readers opened with
** readonly never change the file.
*/
#ifndef H5MEM_STORE_WAL_H
#define H5MEM_STORE_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define WAL_HEADER_SIZE 64
#define WAL_FRAME_OVERHEAD 24           /* frame header + checksum */
#define WAL_MAX_FRAME (1u << 30)        /* payload bytes per frame */
/* Sequence numbers end here: the store records them as int64.  A header
** whose base_seq is above it is damaged; wal_append refuses a frame past
** WAL_MAX_SEQ - 1, so that wal_reset can always number the next epoch. */
#define WAL_MAX_SEQ ((uint64_t)INT64_MAX)

/* Allocated by wal_open(), freed by wal_close(); owns its file descriptor
** and read buffer. */
typedef struct wal wal;

/* The codes of the one error space (util/err.h). */
enum {
  WAL_OK = UTIL_OK,
  WAL_EIO = UTIL_EIO,             /* a read, write, sync or truncate failed */
  WAL_ENOMEM = UTIL_ENOMEM,
  WAL_EMISMATCH = UTIL_EMISMATCH, /* the log belongs to another store */
  WAL_EFULL = UTIL_EFULL,         /* disk full or file size limit (RLIMIT_FSIZE) */
  WAL_EINVAL = UTIL_EINVAL        /* bad argument, readonly log, unsupported version */
};

/* Open the log at path, creating it (with a header carrying store_id, 16
** bytes naming the store it belongs to) when missing and !readonly.  Reads
** the valid prefix of frames: every frame up to the first one that is cut
** short, fails its checksum, has a bad magic/length, or whose sequence
** number is not exactly the previous one + 1.  Unless readonly, the file is
** then truncated right after the valid prefix (so new frames follow good
** ones) and fsync'ed.  A log whose header names another store: WAL_EMISMATCH
** (message says so; the file is left alone).  A missing log when readonly:
** WAL_OK with no frames.  A header that is itself cut short or corrupt:
** treated as an empty log (rewritten unless readonly; the numbering then
** starts again at 1).  A header of a later format version: WAL_EINVAL, the
** file left alone.  On failure *out is NULL and err (errlen bytes, may be
** NULL) says why; on success the caller frees *out with wal_close(). */
int wal_open(const char *path, const uint8_t store_id[16], int readonly, wal **out,
             char *err, size_t errlen);

/* The valid frames in order: cb(ctx, seq, payload, len); cb returns 0 to go
** on (nonzero stops; wal_replay returns it, so it had better not be one of
** the WAL_ codes if the caller must tell them apart).  Payload pointers are
** valid only during the call.  Every frame is read and checked again; a
** frame that no longer validates (the file changed underneath) is WAL_EIO.
** The callback must not append to or reset the same log. */
int wal_replay(wal *w, int (*cb)(void *ctx, uint64_t seq, const uint8_t *p, size_t len),
               void *ctx);

/* Append one frame with sequence number wal_last_seq(w) + 1 (stored in *seq,
** which may be NULL).  sync: 0 write only (the OS flushes later), 1
** fdatasync before returning; other values are WAL_EINVAL.  payload may be
** NULL when len is 0; len is at most WAL_MAX_FRAME.  On any failure
** (no space, util_err_write: WAL_EFULL; other errors WAL_EIO) the file is
** cut back to its previous valid end (ftruncate) so the log stays a valid
** prefix, and the error says what happened ("no space left (File too
** large) writing ...").  If even that cut fails,
** the log refuses every later write (WAL_EIO); reopening it recovers. */
int wal_append(wal *w, const void *payload, size_t len, int sync, uint64_t *seq);

/* fdatasync the log (for group commit: append with sync 0, then one
** wal_sync).  If the sync fails, the frames appended since the last
** successful sync (or open, or reset) are cut away: they may not have
** reached the disk, and the caller reports their commits as failed, so
** they must not be replayed later.  A readonly log: WAL_OK. */
int wal_sync(wal *w);

/* After the store has checkpointed every frame up to and including seq
** `upto`: empty the log (truncate to the header; the header records that
** the next frame's seq is upto + 1, so numbering continues) and fsync.
** upto below wal_last_seq(w) would throw away frames the store has not
** checkpointed: WAL_EINVAL.  A crash in the middle leaves either the old
** log (its frames replay again; the store skips seqs it already holds) or
** the new, empty one. */
int wal_reset(wal *w, uint64_t upto);

uint64_t wal_bytes(const wal *w);    /* current file size (0: no file) */
uint64_t wal_last_seq(const wal *w); /* seq of the last valid frame (header's base - 1 if none) */
uint64_t wal_frames(const wal *w);   /* number of valid frames */
void wal_close(wal *w);              /* no fsync; NULL is a no-op */
const char *wal_errmsg(const wal *w); /* the last error ("" if none) */
/* "" or, when the valid prefix is followed by frames that look valid (the
** log was damaged, not cut short by a crash), what was found: "frame 1 at
** offset 64 of agent.h5-wal is damaged; 40 later frames (from 2) cannot be
** replayed".  wal_open for writing first copies such a log whole to
** "<path>.corrupt-N" (the first N free, created exclusively) and syncs it
** before cutting the log back, and says so here; if the copy fails the
** open fails (the log left as it is). */
const char *wal_note(const wal *w);
/* 1 if the log on disk is no longer the one w read: another file at its
** path (or none where there was one, or one where there was none), a
** rewritten header (wal_reset gives every epoch a new salt, so its header
** checksum differs), or, unless header_only, a different size or a frame
** past the valid prefix that validates now (it was being written when w
** read the log; not after a damaged header, which w read as an empty log:
** its frames are never read, so none "becomes whole"); 0 if the same.
** Reads 64 bytes (and a frame header). */
int wal_changed(wal *w, int header_only);

#endif

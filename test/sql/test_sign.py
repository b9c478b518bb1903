"""Signing keys (issue 25, in progress): h5mem_keygen(path).

- the secret key file is mode 0600 and holds "ed25519-seed:" and 64 hex
  digits; path.pub is "ed25519:" and 64 hex digits, the result too;
- PyNaCl (a third party's Ed25519) makes the same public key from the
  seed, and a signature PyNaCl makes with it verifies under that key;
- two key pairs differ;
- never over a file that exists (the secret's, the public's, a symbolic
  link to elsewhere), and a refusal makes nothing; a missing directory, a
  path that is not text: clear errors;
- a build without libsodium (h5mem_info's libsodium false) refuses with a
  message naming it.
"""
import json
import os
import shutil
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish  # noqa: E402

db = connect()
info = json.loads(db.execute("SELECT h5mem_info()").fetchone()[0])
d = tempfile.mkdtemp(prefix="h5mem_sign_")
key = os.path.join(d, "agent.key")

if not info["libsodium"]:
    expect_error(db, "SELECT h5mem_keygen(?)", "needs libsodium", (key,))
    check(not os.path.exists(key), "nothing made without libsodium")
    shutil.rmtree(d)
    finish()

pub = db.execute("SELECT h5mem_keygen(?)", (key,)).fetchone()[0]
check(pub.startswith("ed25519:") and len(pub) == 72, "the result is the public key: %r" % pub)
st = os.stat(key)
check(stat.S_IMODE(st.st_mode) == 0o600, "the secret key file is 0600: %o" % stat.S_IMODE(st.st_mode))
secret = open(key).read()
check(secret.startswith("ed25519-seed:") and len(secret.strip()) == 13 + 64 and secret.endswith("\n"),
      "the secret key file's form: %d bytes" % len(secret))
check(open(key + ".pub").read() == pub + "\n", "path.pub holds the public key")

try:
    import nacl.signing
except ImportError:  # (python3-nacl: scripts/bootstrap installs it)
    check(False, "PyNaCl is missing: apt-get install python3-nacl")
else:
    seed = bytes.fromhex(secret.strip()[13:])
    sk = nacl.signing.SigningKey(seed)
    check(sk.verify_key.encode().hex() == pub[8:], "PyNaCl makes the same public key from the seed")
    signed = sk.sign(b"a checkpoint")
    nacl.signing.VerifyKey(bytes.fromhex(pub[8:])).verify(signed)  # (raises if it does not verify)

pub2 = db.execute("SELECT h5mem_keygen(?)", (os.path.join(d, "other.key"),)).fetchone()[0]
check(pub2 != pub, "two key pairs differ")

# never over a file that exists
before = open(key).read()
expect_error(db, "SELECT h5mem_keygen(?)", "exists already", (key,))
check(open(key).read() == before, "the secret key is untouched")
lone = os.path.join(d, "lone.key")
open(lone + ".pub", "w").write("mine\n")
expect_error(db, "SELECT h5mem_keygen(?)", "lone.key.pub exists already", (lone,))
check(not os.path.exists(lone), "a refusal makes nothing")
target = os.path.join(d, "target")
os.symlink(target, os.path.join(d, "link.key"))
expect_error(db, "SELECT h5mem_keygen(?)", "exists already", (os.path.join(d, "link.key"),))
check(not os.path.exists(target), "nothing written through a link")
expect_error(db, "SELECT h5mem_keygen(?)", "No such file or directory", (os.path.join(d, "no", "dir.key"),))
expect_error(db, "SELECT h5mem_keygen(NULL)", "expected the secret key file's path")
expect_error(db, "SELECT h5mem_keygen(5)", "expected the secret key file's path")
# it writes files: not from a view of the schema (a database file could hold one)
db.execute("CREATE VIEW v AS SELECT h5mem_keygen('%s') AS k" % os.path.join(d, "view.key"))
expect_error(db, "SELECT * FROM v", "unsafe use of h5mem_keygen")
check(not os.path.exists(os.path.join(d, "view.key")), "nothing made from a view")
shutil.rmtree(d)
finish()

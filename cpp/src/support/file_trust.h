// Whether a file OpenCuTe finds by itself (not one the user names) may hold code that it runs:
// the compile cache's folder and entries, and toolkit libraries found in default places. The
// threat is another local user putting code where OpenCuTe looks, such as a world-writable
// /tmp/{user} created before the user's first run.
//
// Each check returns "" when the file may be trusted, else why not, as a phrase that follows
// the path in a message ("is owned by nobody (uid 65534), not by you (root, uid 0)").
#pragma once
#include <sys/stat.h>

#include <string>

namespace opencute::support {

// The compile cache's rule, for what fstat() says of an opened folder or file: it is the
// current user's (geteuid) and neither its group nor others may write it.
std::string why_not_private(const struct stat& st);

// The rule for toolkit pieces in default places (/usr/local/cuda, the nvidia-* wheels): the
// file and every folder above it (symbolic links resolved) belong to root or to the current
// user, and others may not write any of them; a sticky folder such as /tmp may be
// world-writable, since no one else can replace what the user put in it. Group write is
// allowed: shared toolkit installs are commonly managed by a group.
std::string why_not_trusted_install(const std::string& path);

// "nobody (uid 65534)": a user for messages.
std::string describe_user(uid_t uid);

}  // namespace opencute::support

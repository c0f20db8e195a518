#include "support/file_trust.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace opencute::support {
namespace {

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

}  // namespace

std::string describe_user(uid_t uid) {
  std::string s;
  if (const passwd* pw = getpwuid(uid)) s = std::string(pw->pw_name) + " ";
  return s + "(uid " + std::to_string(uid) + ")";
}

std::string why_not_private(const struct stat& st) {
  uid_t me = geteuid();
  if (st.st_uid != me)
    return "is owned by " + describe_user(st.st_uid) + ", not by you, " + describe_user(me);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return "is writable by its group or by others (mode " + octal_mode(st.st_mode) + ")";
  return "";
}

std::string why_not_trusted_install(const std::string& path) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return "cannot be resolved (" + std::string(std::strerror(errno)) + ")";
  const std::string full = resolved;
  const uid_t me = geteuid();
  // Every prefix of the resolved path, from "/" down to the file: a folder anyone else controls
  // lets them replace what lies below it.
  size_t end = 0;
  while (true) {
    std::string part = end == 0 ? "/" : full.substr(0, end);
    struct stat st{};
    if (::stat(part.c_str(), &st) != 0) return "cannot be checked (" + std::string(std::strerror(errno)) + ")";
    std::string subject = part == full ? "is" : "lies in " + part + ", which is";
    if (st.st_uid != 0 && st.st_uid != me)
      return subject + " owned by " + describe_user(st.st_uid) + ", neither root nor you";
    bool sticky_folder = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    if ((st.st_mode & S_IWOTH) && !sticky_folder)
      return subject + " writable by others (mode " + octal_mode(st.st_mode) + ")";
    if (end == full.size()) break;
    end = full.find('/', end + 1);
    if (end == std::string::npos) end = full.size();
  }
  return "";
}

}  // namespace opencute::support

// The temporary files a checkpoint save writes before renaming them into
// place, and the rule that removes those of a save killed mid-write.
//
// A temporary is "<final name>.tmp.<pid>.<start>.<host>": <start> is the
// writer's start time (/proc/<pid>/stat), so pid and start name one process
// for the life of its host, as the core's /dev/shm names do. A process
// killed during save() cannot remove its temporary; the next save() or
// restore() in that directory (on the chief) removes every temporary of a
// checkpoint or `latest` whose writer ran on this host and is gone, and
// logs each at INFO. Temporaries of other hosts (a shared filesystem) and
// of running processes are left alone.
#pragma once

#include <filesystem>
#include <string>

namespace collective::distribute::detail {

// The temporary that this process writes for directory/final_name.
std::filesystem::path checkpoint_temp_path(const std::filesystem::path& directory,
                                           const std::string& final_name);

// Removes the temporaries in directory left by processes of this host that
// are gone; returns how many. Best effort: a directory that cannot be
// listed, or a file that cannot be removed, is left for the next time
// (reading a checkpoint reports its own errors).
int remove_abandoned_checkpoint_temps(const std::filesystem::path& directory);

}  // namespace collective::distribute::detail

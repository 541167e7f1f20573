// COLLECTIVE_API marks what libcollective exports. The library is compiled
// with hidden visibility, so only the API below this mark is visible to
// programs; the internals stay private to the shared object, free to change
// between releases and invisible to symbol interposition.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define COLLECTIVE_API __attribute__((visibility("default")))
// A member of an exported class that only the library itself may call.
#define COLLECTIVE_HIDDEN __attribute__((visibility("hidden")))
#else
#define COLLECTIVE_API
#define COLLECTIVE_HIDDEN
#endif

/* ctype.h for device objects (freestanding Xtensa): the "C" locale's classes, defined by
 * libneuroncustomop.a (there are no other locales on a core). */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int isalnum(int c), isalpha(int c), isblank(int c), iscntrl(int c), isdigit(int c);
int isgraph(int c), islower(int c), isprint(int c), ispunct(int c), isspace(int c);
int isupper(int c), isxdigit(int c), tolower(int c), toupper(int c);
#ifdef __cplusplus
}
#endif

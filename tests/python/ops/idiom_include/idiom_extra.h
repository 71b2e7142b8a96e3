// Found through extra_include_paths / nrt-pool build -I (the idiom corpus's test).
#pragma once
#define IDIOM_OFFSET 5

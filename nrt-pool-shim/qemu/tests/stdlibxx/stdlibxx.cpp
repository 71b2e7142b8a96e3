// Kernels written with the C++ standard library's containers, strings, smart pointers and
// function objects, and with C's string, ctype and stdlib functions beyond the basics.
// Their containers stay within a core's libc heap (the rest of the data scratch area, 128
// blocks: docs/decisions.md D17).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "neuron_customop.hpp"

struct alignas(32) Wide {
    float lane[8];
};

static std::optional<size_t> first_negative(const std::vector<float> &v) {
    auto it = std::find_if(v.begin(), v.end(), [](float f) { return f < 0.0f; });
    if (it == v.end()) return std::nullopt;
    return size_t(it - v.begin());
}

void containers(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    std::vector<float> v;
    for (int64_t i = 0; i < x.numel(); i++) v.push_back(in.read());
    std::vector<float> sorted(v);
    std::stable_sort(sorted.begin(), sorted.end(), std::greater<float>());
    std::vector<float> prefix(v.size());
    std::partial_sum(v.begin(), v.end(), prefix.begin());
    v.insert(v.begin() + 1, 100.0f);
    v.erase(v.begin() + 1);

    std::map<int, float> by_bucket;
    std::unordered_map<std::string, int> counts;
    std::set<int> seen;
    std::unordered_set<long long> wide_keys;
    std::deque<float> window;
    std::list<int> order;
    std::priority_queue<float> top;
    for (size_t i = 0; i < v.size(); i++) {
        int bucket = int(v[i]) / 8;
        by_bucket[bucket] += v[i];
        counts["b" + std::to_string(bucket)]++;
        seen.insert(bucket);
        wide_keys.insert((long long)bucket << 33);
        window.push_back(v[i]);
        if (window.size() > 4) window.pop_front();
        order.push_front(int(i));
        if (order.size() > 16) order.pop_back();
        top.push(v[i]);
    }
    auto unique = std::make_unique<Wide[]>(4);
    auto shared = std::make_shared<std::vector<int>>(3, 7);
    std::shared_ptr<std::vector<int>> other = shared;
    std::function<float(float, int)> f = [&](float a, int k) { return a * float(k) + window.front(); };
    std::tuple<int, std::string, float> t{3, std::string("three"), 3.5f};
    std::string_view sv = "key=value;other=thing";
    std::string name = std::string(sv.substr(0, sv.find('='))) + ":" + std::get<1>(t);
    int parsed = std::stoi("  -123abc") + std::stoi("ff", nullptr, 16);
    // Atomics (library calls on this core: __atomic_*, one thread per core).
    std::atomic<int> hits{0};
    std::atomic<long long> wide{1LL << 40};
    struct Pair { int a, b; };
    std::atomic<Pair> pair{Pair{1, 2}};
    long long expect = 1LL << 40;
    wide.compare_exchange_strong(expect, (1LL << 40) + 5);
    Pair was = pair.exchange(Pair{3, 4});
    hits.fetch_add(was.b);
    hits ^= 7;
    // (2.5e-3 + 12 + 1 + 100 + 1)
    double real = std::stod(" 2.5e-3xyz") + std::stof("0x1.8p3") + (std::isinf(std::strtod("-inf", nullptr)) ? 1.0 : 0.0) +
                  std::atof("1e2") + double(std::strtof("3.4028236e38", nullptr) > 1e38f);

    auto o = out.write_stream_accessor<float>();
    for (size_t i = 0; i < v.size(); i++) {
        int bucket = int(v[i]) / 8;
        unique[i % 4].lane[i % 8] += v[i];
        float r = sorted[i] + prefix[i] * 0.5f + by_bucket[bucket] +
                  float(counts["b" + std::to_string(bucket)]) + float(seen.count(bucket)) +
                  float(wide_keys.count((long long)bucket << 33)) + f(v[i], int(i % 5)) +
                  float(std::get<0>(t)) + unique[i % 4].lane[i % 8] + float(other->at(1)) +
                  float(shared.use_count()) + float(name.size()) + float(parsed % 97) +
                  float(real) + float(hits.load() + int(wide.load() % 1000) + pair.load().a);
        o.write(r);
    }
    std::optional<size_t> neg = first_negative(v);
    std::string joined;
    for (auto it = by_bucket.begin(); it != by_bucket.end(); ++it) {
        if (!joined.empty()) joined += ',';
        joined += std::to_string(it->first);
    }
    int64_t big = int64_t(v.size()) << 33;
    std::imaxdiv_t qr = std::imaxdiv(std::strtoimax("-123456789012", nullptr, 10), 1000);
    printf("wide: %" PRId64 " %" PRIu32 " %" PRIx64 " %" PRIdMAX "/%" PRIdMAX " %" PRIuPTR "\n",
           big, uint32_t(v.size()), uint64_t(big) | 0xabcULL, qr.quot, qr.rem,
           uintptr_t(sizeof(void *) * 0 + 7));
    printf("containers: %s | %s | first negative %d | top %.3f | order %d..%d | %s %zu\n",
           name.c_str(), joined.c_str(), neg ? int(*neg) : -1, top.top(), order.front(),
           order.back(), std::to_string(2.5).c_str(), counts.size());
}

// What libc++ would throw is a device fault naming the function (no exceptions on a core).
void bad_stoi(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) o.write(in.read() + float(std::stoi("twelve")));
}

// A container beyond the core's libc heap: a fault saying how full the heap is.
void too_big(const neuron::Tensor &x, neuron::Tensor &out) {
    std::vector<float> all(size_t(x.numel()) * 1000);
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) o.write(in.read() + all[size_t(i)]);
}

void text_mix(const neuron::Tensor &x, neuron::Tensor &out) {
    char line[] = "alpha, Beta;gamma  42 DELTA\t7";
    char copy[sizeof line];
    std::strxfrm(copy, line, sizeof copy);
    // Every byte and EOF through every class (C returns any nonzero for "in").
    unsigned classes = 0;
    for (int c = -1; c < 256; c++) {
        int bits = !!std::isalnum(c) | !!std::isalpha(c) << 1 | !!std::isblank(c) << 2 |
                   !!std::iscntrl(c) << 3 | !!std::isdigit(c) << 4 | !!std::isgraph(c) << 5 |
                   !!std::islower(c) << 6 | !!std::isprint(c) << 7 | !!std::ispunct(c) << 8 |
                   !!std::isspace(c) << 9 | !!std::isupper(c) << 10 | !!std::isxdigit(c) << 11;
        classes = classes * 31u + unsigned(bits + std::toupper(c) * 3 + std::tolower(c) * 5);
    }
    size_t span = std::strspn(line, "abcdefghijklmnopqrstuvwxyz") * 100 +
                  std::strcspn(line, ";") * 10 + size_t(std::strpbrk(line, "0123456789") - line);
    int tokens = 0;
    for (char *tok = std::strtok(copy, " ,;\t"); tok; tok = std::strtok(nullptr, " ,;\t")) {
        tokens = tokens * 3 + int(std::strlen(tok));
    }
    const char *found = static_cast<const char *>(std::memchr(line, 'D', sizeof line));
    std::div_t d = std::div(-17, 5);
    std::lldiv_t ld = std::lldiv(-100000000007LL, 13);
    std::srand(2024);
    int r1 = std::rand();
    int r2 = std::rand();
    std::srand(1);
    int r3 = std::rand();
    void *aligned = std::aligned_alloc(64, 256);
    bool env = std::getenv("NRT_POOL_NO_SUCH_VARIABLE") != nullptr;
    int coll = std::strcoll("apple", "apricot") < 0;
    printf("text_mix: %u %zu %d %td %d/%d %lld/%lld %d %d %d %s %d %d\n", classes, span, tokens,
           found - line, d.quot, d.rem, ld.quot, ld.rem, r1, r2, r3,
           (reinterpret_cast<uintptr_t>(aligned) % 64 == 0) ? "aligned" : "unaligned", env, coll);
    std::free(aligned);
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) {
        o.write(in.read() + float(std::rand() % 1000) + float(classes % 7));
    }
}

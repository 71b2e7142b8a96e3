// torch/neuron/detail/c10_arith.h (internal; included once per number type, hence no
// include guard): NRT_C10_ARITH(T) defines c10::Half's and c10::BFloat16's arithmetic.
// Half op Half is Half; mixed with float or double, the wider type. The includer #undefs it.
#define NRT_C10_ARITH(T)                                                                   \
    inline T operator+(T a, T b) { return T(float(a) + float(b)); }                        \
    inline T operator-(T a, T b) { return T(float(a) - float(b)); }                        \
    inline T operator*(T a, T b) { return T(float(a) * float(b)); }                        \
    inline T operator/(T a, T b) { return T(float(a) / float(b)); }                        \
    inline T operator-(T a) { return T(-float(a)); }                                       \
    inline T &operator+=(T &a, T b) { return a = a + b; }                                  \
    inline T &operator-=(T &a, T b) { return a = a - b; }                                  \
    inline T &operator*=(T &a, T b) { return a = a * b; }                                  \
    inline T &operator/=(T &a, T b) { return a = a / b; }                                  \
    inline float operator+(T a, float b) { return float(a) + b; }                          \
    inline float operator-(T a, float b) { return float(a) - b; }                          \
    inline float operator*(T a, float b) { return float(a) * b; }                          \
    inline float operator/(T a, float b) { return float(a) / b; }                          \
    inline float operator+(float a, T b) { return a + float(b); }                          \
    inline float operator-(float a, T b) { return a - float(b); }                          \
    inline float operator*(float a, T b) { return a * float(b); }                          \
    inline float operator/(float a, T b) { return a / float(b); }                          \
    inline double operator+(T a, double b) { return double(float(a)) + b; }                \
    inline double operator-(T a, double b) { return double(float(a)) - b; }                \
    inline double operator*(T a, double b) { return double(float(a)) * b; }                \
    inline double operator/(T a, double b) { return double(float(a)) / b; }                \
    inline double operator+(double a, T b) { return a + double(float(b)); }                \
    inline double operator-(double a, T b) { return a - double(float(b)); }                \
    inline double operator*(double a, T b) { return a * double(float(b)); }                \
    inline double operator/(double a, T b) { return a / double(float(b)); }                \
    inline T operator+(T a, int b) { return a + T(b); }                                    \
    inline T operator-(T a, int b) { return a - T(b); }                                    \
    inline T operator*(T a, int b) { return a * T(b); }                                    \
    inline T operator/(T a, int b) { return a / T(b); }                                    \
    inline T operator+(int a, T b) { return T(a) + b; }                                    \
    inline T operator-(int a, T b) { return T(a) - b; }                                    \
    inline T operator*(int a, T b) { return T(a) * b; }                                    \
    inline T operator/(int a, T b) { return T(a) / b; }                                    \
    inline bool operator==(T a, T b) { return float(a) == float(b); }                      \
    inline bool operator!=(T a, T b) { return float(a) != float(b); }                      \
    inline bool operator<(T a, T b) { return float(a) < float(b); }                        \
    inline bool operator>(T a, T b) { return float(a) > float(b); }                        \
    inline bool operator<=(T a, T b) { return float(a) <= float(b); }                      \
    inline bool operator>=(T a, T b) { return float(a) >= float(b); }

// c10/core/ScalarType.h: c10::ScalarType (the element types the device carries), their
// names and sizes, the descriptor's dtype codes, and CppTypeToScalarType.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace c10 {

/// c10's scalar type ordinals (the ones the device carries).
enum class ScalarType : int8_t {
    Byte = 0,
    Char = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Half = 5,
    Float = 6,
    BFloat16 = 15,
    Undefined = 18,
};

}  // namespace c10

namespace c10 {

inline const char *toString(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: return "Byte";
        case ScalarType::Char: return "Char";
        case ScalarType::Short: return "Short";
        case ScalarType::Int: return "Int";
        case ScalarType::Long: return "Long";
        case ScalarType::Half: return "Half";
        case ScalarType::Float: return "Float";
        case ScalarType::BFloat16: return "BFloat16";
        default: return "Undefined";
    }
}

inline size_t elementSize(ScalarType t) {
    switch (t) {
        case ScalarType::Byte:
        case ScalarType::Char: return 1;
        case ScalarType::Short:
        case ScalarType::Half:
        case ScalarType::BFloat16: return 2;
        case ScalarType::Int:
        case ScalarType::Float: return 4;
        case ScalarType::Long: return 8;
        default: return 0;
    }
}

inline bool isIntegralType(ScalarType t) {
    return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short ||
           t == ScalarType::Int || t == ScalarType::Long;
}

inline bool isFloatingType(ScalarType t) {
    return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::BFloat16;
}

/// The descriptor's NEURON_ISA_TPB_DTYPE for a scalar type, and back.
inline uint8_t toIsa(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: return 3;
        case ScalarType::Char: return 2;
        case ScalarType::Short: return 4;
        case ScalarType::Int: return 8;
        case ScalarType::Long: return 12;
        case ScalarType::Half: return 7;
        case ScalarType::Float: return 10;
        case ScalarType::BFloat16: return 6;
        default: return 0;
    }
}

inline ScalarType fromIsa(uint8_t d) {
    switch (d) {
        case 3: return ScalarType::Byte;
        case 2: return ScalarType::Char;
        case 4: return ScalarType::Short;
        case 8: return ScalarType::Int;
        case 12: return ScalarType::Long;
        case 7: return ScalarType::Half;
        case 10: return ScalarType::Float;
        case 6: return ScalarType::BFloat16;
        default: return ScalarType::Undefined;
    }
}

/// The element type of a C++ type (the accessors check it against the tensor's).
template <typename T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = ScalarType::Byte; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = ScalarType::Char; };
template <> struct CppTypeToScalarType<int16_t> { static constexpr ScalarType value = ScalarType::Short; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = ScalarType::Int; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = ScalarType::Long; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = ScalarType::Half; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = ScalarType::Float; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = ScalarType::BFloat16; };
template <typename T> struct CppTypeToScalarType<const T> : CppTypeToScalarType<T> {};

}  // namespace c10

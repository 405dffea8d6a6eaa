"""Java binding: the SWIG interface and the idiomatic facade.

Outputs (paths relative to the repository root):

  bindings/java/kernelbridge.i          SWIG interface; SWIG runs on it at build
                                         time and produces the package-private raw
                                         layer (KernelBridgeNative, ...NativeJNI) and
                                         the C wrapper.
  bindings/java/src/org/kernelbridge/
    KernelBridge.java                    the public facade: lowerCamelCase static
                                         methods, derived dimensions, length checks;
                                         kernels on arrays, direct NIO buffers and
                                         DeviceBuffers (kernels with raw-byte tensors
                                         also on arrays with the bytes in direct
                                         buffers); the context-free functions.
    Context.java                         the class of the context handle (kb_context):
                                         constructor, factories (Context.cuda),
                                         queries and methods.
    Status.java, Backend.java, ...       one Java enum per C enum (Activation, Dtype).

Hand-written next to them (bindings/java/src/org/kernelbridge/): DeviceBuffer
(kb_buffer: its functions are listed in HANDWRITTEN and checked here),
KernelBridgeException / DeviceLostException, Cuda, Bf16, F16, QTensor (weights
in storage formats, over the generated quantize / linearW / embeddingW),
Checks, Scratch and NativeLoader.

A generated kernel wrapper holds only what is specific to the kernel: its
javadoc, the derived dims, one line per check naming its dims and tensors
(shapes as size expressions), and the raw call.  The steps every wrapper shares
are written once: the checks and exceptions in Checks, the small-call staging
of arrays through the context's scratch in Scratch, and the context's address
and reachability in the raw method (the kbj_kernel_ctx typemap).  They are
small static methods, one per Java array type, so that the JIT inlines them and
the calls stay allocation-free and monomorphic.

The raw layer is described by annotations only: every tensor becomes a typedef
naming its direction and dtype (kbj_f32_in, kbj_bf16_out, kbj_u8_in_i8, ...),
and typemaps on those typedefs decide how a Java array, direct buffer or native
address reaches C.  See docs/java.md for the array-passing strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .. import contracts
from ..banner import banner
from ..model import Api, Const, Dim, Enum, Expr, Function, Param

NAME = "java"

PACKAGE = "org.kernelbridge"
PKG_DIR = "bindings/java/src/org/kernelbridge"
INTERFACE = "bindings/java/kernelbridge.i"
MODULE = "KernelBridgeNative"  # SWIG module class; the JNI class is MODULE + "JNI"

# Total elements of all arrays of one call up to which the arrays are pinned
# with GetPrimitiveArrayCritical instead of copied (see docs/java.md).
CRITICAL_MAX_ELEMENTS = 4096

# Bytes of the buffer the native wrapper passes for an `out string` parameter
# (its capacity parameter is hidden from Java), terminator included.
STRING_CAPACITY = 256

_JAVA_KEYWORDS = set(
    """abstract assert boolean break byte case catch char class const continue default do double else enum
    extends final finally float for goto if implements import instanceof int interface long native new package
    private protected public return short static strictfp super switch synchronized this throw throws transient try
    void volatile while true false null var record yield""".split()
)

# Java type of a scalar kind (parameters of the facade and of the raw layer).
_JAVA_SCALAR = {
    "bool": "boolean",
    "int32": "int",
    "int64": "long",
    "uint32": "long",
    "uint64": "long",
    "float32": "float",
    "float64": "double",
}


@dataclass(frozen=True)
class _Elem:
    """How a tensor element type reaches Java."""

    array: str  # Java array type
    buffer: str  # java.nio buffer class
    jni: str  # JNI array type
    c: str  # C element type
    kind: str  # KBJ_* array kind of the C runtime (which Get/Set<Type>ArrayRegion)
    size: int  # bytes per element
    scratch: str  # Context field: the per-context scratch viewed as this buffer type


_F32 = _Elem("float[]", "FloatBuffer", "jfloatArray", "float", "KBJ_F32", 4, "scratchFloats")
_I32 = _Elem("int[]", "IntBuffer", "jintArray", "int32_t", "KBJ_I32", 4, "scratchInts")
_I16 = _Elem("short[]", "ShortBuffer", "jshortArray", "uint16_t", "KBJ_I16", 2, "scratchShorts")
_I8 = _Elem("byte[]", "ByteBuffer", "jbyteArray", "uint8_t", "KBJ_I8", 1, "")

# Tensor dtypes of kernels.  bf16 and f16 hold the 16-bit patterns in Java's
# short (see Bf16, F16); Java has no 16-bit float type.
_DTYPE = {"f32": _F32, "i32": _I32, "bf16": _I16, "f16": _I16}

# A u8 (raw bytes) tensor of a function that is not a kernel (the buffer
# transfers) accepts any of these arrays: one raw variant each, named by the key
# (kb_buffer_upload__f32, ...); its size in bytes is the array's length times the
# element size.
_RAW_ARRAYS = {"i8": _I8, "i16": _I16, "i32": _I32, "f32": _F32}

# A u8 tensor of a kernel (weights in a storage format: kb_linear_w, ...) is a
# byte[] (the raw i8 variant's typemap), any direct Buffer (its bytes) or a
# DeviceBuffer of bytes; its byte count is its length.
_RAW_KERNEL_ARRAY = "i8"

# The raw variant (and facade overload) of a kernel mixing u8 and other tensors
# that takes Java arrays for the typed tensors and direct buffers for the bytes:
# weights memory-mapped from a GGUF file used with float[] activations, with no
# copy of either.
BYTES_DIRECT = "bytes_direct"


def _mixes_bytes(fn: Function) -> bool:
    """A kernel with u8 tensors and tensors of other dtypes."""
    dtypes = {p.tensor.dtype for p in fn.tensors}
    return "u8" in dtypes and len(dtypes) > 1


def _elem(dtype: str) -> _Elem:
    """How a kernel's tensor of this dtype reaches Java (u8: byte[])."""
    if dtype == "u8":
        return _I8
    if dtype not in _DTYPE:
        raise JavaEmitError(f"dtype {dtype} has no Java form")
    return _DTYPE[dtype]

_DIRS = {"in": "KBJ_IN", "out": "KBJ_OUT", "inout": "KBJ_INOUT"}

DIRECT_SUFFIX = "__direct"
ADDR_SUFFIX = "__addr"

# Total elements of a call's arrays up to which the facade copies them into the
# context's off-heap scratch and calls the address variant (no JNI function
# calls at all); must match Context.SCRATCH_ELEMENTS.  The scratch holds this
# many 4-byte elements (twice as many 2-byte ones).
SCRATCH_ELEMENTS = 1024

# Handles whose Java class is written by hand (its API is Java-specific:
# typed upload/download overloads, slices), with the functions that class
# wraps.  The generator still declares every one of them in the SWIG
# interface; it fails when the header adds or removes a function of such a
# handle, so that the class is updated with it.
HANDWRITTEN = {
    "kb_tokenizer": (
        "Tokenizer",
        (
            "kb_tokenizer_create",
            "kb_tokenizer_destroy",
            "kb_tokenizer_n_tokens",
            "kb_tokenizer_bos",
            "kb_tokenizer_eos",
            "kb_tokenize",
            "kb_tokenizer_piece",
            "kb_detokenize",
        ),
    ),
    "kb_buffer": (
        "DeviceBuffer",
        (
            "kb_buffer_create",
            "kb_buffer_destroy",
            "kb_buffer_size",
            "kb_buffer_device",
            "kb_buffer_data",
            "kb_buffer_upload",
            "kb_buffer_download",
            "kb_buffer_fill",
            "kb_buffer_copy",
        ),
    ),
    # GGUF files: Gguf.java (names, strings and arrays as Java values).
    "kb_gguf": (
        "Gguf",
        (
            "kb_gguf_open",
            "kb_gguf_open_memory",
            "kb_gguf_destroy",
            "kb_gguf_version",
            "kb_gguf_key_count",
            "kb_gguf_find_key",
            "kb_gguf_key_name",
            "kb_gguf_key_type",
            "kb_gguf_get_int64",
            "kb_gguf_get_f32",
            "kb_gguf_get_i32",
            "kb_gguf_string_bytes",
            "kb_gguf_get_string",
            "kb_gguf_array_type",
            "kb_gguf_array_length",
            "kb_gguf_string_array_bytes",
            "kb_gguf_get_string_array_data",
            "kb_gguf_get_string_array_offsets",
            "kb_gguf_tensor_count",
            "kb_gguf_find_tensor",
            "kb_gguf_tensor_name",
            "kb_gguf_tensor_type",
            "kb_gguf_tensor_n_dims",
            "kb_gguf_tensor_dim",
            "kb_gguf_tensor_bytes",
            "kb_gguf_tensor_offset",
            "kb_gguf_tensor_read",
        ),
    ),
}


class JavaEmitError(Exception):
    pass


# --- names ---------------------------------------------------------------------


def camel(name: str, upper: bool = False) -> str:
    parts = [p for p in name.split("_") if p]
    if not parts:
        return name
    out = parts[0].lower() if not upper else parts[0][:1].upper() + parts[0][1:].lower()
    for p in parts[1:]:
        out += p[:1].upper() + p[1:].lower()
    return out


def jname(name: str) -> str:
    """Java identifier for a C parameter name."""
    n = camel(name)
    return n + "_" if n in _JAVA_KEYWORDS else n


def strip_prefix(name: str) -> str:
    return name[3:] if name.startswith("kb_") else name


def enum_class(e: Enum) -> str:
    return camel(strip_prefix(e.name), upper=True)


def handle_class(name: str) -> str:
    if name in HANDWRITTEN:
        return HANDWRITTEN[name][0]
    return camel(strip_prefix(name), upper=True)


def _fn_handles(fn: Function) -> List[str]:
    """Handle types a function takes, returns or runs on, in parameter order."""
    out: List[str] = []
    for p in fn.params:
        name = None
        if p.role in ("handle", "context"):
            name = p.ctype.name
        elif p.role == "handle_out":
            name = p.handle_type
        if name and name not in out:
            out.append(name)
    return out


def _is_thread_message(fn: Function) -> bool:
    """kb_last_error: a borrowed string of the calling thread.  Java reads it
    inside the failing native call (the exception's message) and does not
    expose it: between two native calls a Java thread may not keep its OS
    thread (virtual threads)."""
    return fn.returns_string == "borrowed" and not fn.params


def _hidden_capacities(fn: Function) -> List[str]:
    return [p.capacity for p in fn.params if p.role == "out_string" and p.capacity]


# --- javadoc --------------------------------------------------------------------


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*/", "*&#47;").replace("@", "&#64;")


def javadoc(text: str, indent: str, tags: Optional[List[str]] = None, paras: Optional[List[str]] = None) -> str:
    """A Javadoc comment: `text` (from the header, HTML-escaped), then the
    paragraphs `paras` (a paragraph may span several lines) and the block tags
    `tags` (both Javadoc already)."""
    lines = _html(text).split("\n") if text else []
    for p in paras or []:
        if lines:
            lines.append("")
        lines.extend(p.split("\n"))
    if tags:
        if lines:
            lines.append("")
        lines.extend(tags)
    if not lines:
        return ""
    out = [indent + "/**"]
    for line in lines:
        out.append((indent + " * " + line).rstrip())
    out.append(indent + " */")
    return "\n".join(out) + "\n"


# --- the SWIG interface -----------------------------------------------------------


def _variants(fn: Function) -> List[str]:
    """Raw variants of a function: "" (arrays), "direct", "addr" for kernels
    (a u8 tensor of a kernel is a byte[] in the array variant), plus
    BYTES_DIRECT for a kernel mixing u8 and other tensors; one per accepted
    array type plus "direct" and "addr" for the u8 tensors of other functions
    (the buffer transfers); just "" without tensors."""
    if not fn.tensors:
        return [""]
    dtypes = {p.tensor.dtype for p in fn.tensors}
    if "u8" in dtypes and not fn.is_kernel:
        if len(dtypes) != 1:
            # Bytes with typed arrays outside kernels (the tokenizer's text and
            # ids): one variant, Java arrays, the bytes a byte[].
            for p in fn.tensors:
                if p.tensor.ld is not None or p.tensor.stride is not None:
                    raise JavaEmitError(f"{fn.name}: tensor {p.name} with a row or item stride has no Java form")
            return [""]
        return list(_RAW_ARRAYS) + ["direct", "addr"]
    for d in dtypes:
        if d != "u8" and d not in _DTYPE:
            raise JavaEmitError(f"{fn.name}: dtype {d} has no Java form")
    for p in fn.tensors:
        if p.tensor.dtype == "u8" and (p.tensor.ld is not None or p.tensor.stride is not None):
            raise JavaEmitError(f"{fn.name}: u8 tensor {p.name} with a row or item stride has no Java form")
    return ["", "direct", "addr"] + ([BYTES_DIRECT] if _mixes_bytes(fn) else [])


def _variant_name(fn: Function, variant: str) -> str:
    return fn.name + ("__" + variant if variant else "")


def _tensor_typedef(p: Param, variant: str) -> str:
    t = p.tensor
    if variant == BYTES_DIRECT:
        # Arrays, except the bytes: direct buffers.
        variant = "direct" if t.dtype == "u8" else ""
    if t.dtype == "u8":
        return f"kbj_u8_{t.direction}_{variant or _RAW_KERNEL_ARRAY}"
    return f"kbj_{t.dtype}_{t.direction}{'_' + variant if variant else ''}"


def _opens_call(fn: Function) -> bool:
    """A function without a context that takes tensors (the tokenizer's): its
    first parameter opens the call's array state (kbj_c) that a context
    parameter opens otherwise, and its status releases the arrays before it
    throws."""
    return not fn.has_context and bool(fn.tensors)


def _c_param(api: Api, fn: Function, p: Param, variant: str) -> str:
    if _opens_call(fn) and p is fn.params[0]:
        if p.role == "handle":
            return f"kbj_open_{p.ctype.name} *{p.name}"
        if p.ctype.kind == "int64" and p.role in ("dim", "scalar"):
            return f"kbj_open_i64 {p.name}"
        raise JavaEmitError(f"{fn.name}: a context-free function with tensors must start with a handle or an int64_t")
    if p.role == "context":
        return f"kbj_{'kernel_' if fn.is_kernel else ''}ctx *{p.name}"
    if p.role == "tensor":
        return f"{_tensor_typedef(p, variant)} *{p.name}"
    if p.role == "handle_out":
        return f"{p.handle_type} **{p.name}"
    if p.role == "handle":
        return f"{'const ' if p.ctype.const else ''}{p.ctype.name} *{p.name}"
    if p.role == "out_scalar":
        if p.ctype.pointee != "int64":
            raise JavaEmitError(f"{fn.name}: out scalar {p.name} must be int64_t *")
        return f"kbj_out_i64 *{p.name}"
    if p.role == "out_string":
        return f"kbj_string_out *{p.name}"
    if p.role == "in_string":
        return f"const char *{p.name}"
    if p.role == "dim" and p.name in _hidden_capacities(fn):
        return f"kbj_string_capacity {p.name}"
    return f"{p.ctype.spelling} {p.name}"


def _c_return(fn: Function) -> str:
    if fn.returns.kind == "enum" and fn.returns.name == "kb_status":
        if fn.has_context:
            if fn.params[0].role != "context":
                raise JavaEmitError(f"{fn.name}: the context must be the first parameter")
            return "kbj_status_ctx "
        return "kbj_status_arrays " if _opens_call(fn) else "kbj_status "
    if fn.returns.kind == "string":
        return "const char *"
    if fn.returns_address:
        return "kbj_data_address *"
    return fn.returns.spelling + " "


_RUNTIME_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"

/* Direction of a tensor as the typemaps see it (from the header's in/out/inout). */
#define KBJ_IN 0
#define KBJ_OUT 1
#define KBJ_INOUT 2
/* Element type of a Java array: which Get/Set<Type>ArrayRegion copies it. */
#define KBJ_F32 0
#define KBJ_I32 1
#define KBJ_I16 2
#define KBJ_I8 3

/* A call pins its arrays (GetPrimitiveArrayCritical, no copy) when all of them
 * together hold at most this many elements; larger calls copy them with
 * Get/Set<Type>ArrayRegion so that no JNI critical region is held across a
 * long kernel (which would stall the garbage collector). */
#define KBJ_CRITICAL_MAX_ELEMENTS @CRITICAL_MAX@

#define KBJ_MAX_ARRAYS @MAX_ARRAYS@

/* The buffer an `out string` parameter gets (its capacity is not exposed). */
#define KBJ_STRING_CAPACITY @STRING_CAPACITY@

/* Types the typemaps attach to. */
typedef kb_context kbj_ctx;
typedef kb_context kbj_kernel_ctx; /* a kernel's context: a Context in the raw Java method */
typedef kb_status kbj_status;     /* no context: the message is kb_last_error() */
typedef kb_status kbj_status_ctx; /* a context first: the message is the context's */
typedef int64_t kbj_out_i64;      /* out scalar: returned through a long[1] */
typedef char kbj_string_out;      /* out string: returned through a byte[] */
typedef int64_t kbj_string_capacity;
typedef kb_status kbj_status_arrays; /* no context, arrays: released before the throw */
typedef int64_t kbj_open_i64;        /* an int64_t first parameter that opens the array state */
typedef void kbj_data_address;    /* returns address: a long */
/* Handles as the first parameter of a context-free call with arrays. */
@HANDLE_TYPEDEFS@
/* Tensors, one per dtype, direction and variant (arrays, _direct buffers,
 * _addr native addresses; u8 tensors: one per accepted Java array type). */
@TENSOR_TYPEDEFS@
typedef struct kbj_array {
  jarray array;  /* NULL for a Java null */
  jsize len;
  int dir;
  int kind;
  int owner;     /* copy mode: index of an earlier slot holding the same array, or -1 */
  int copy_in;   /* copy mode, owners: the buffer was filled from the array */
  int copy_out;  /* copy mode, owners: the buffer goes back to the array on success */
  void *ptr;
  void *target;  /* the wrapper's argument variable receiving ptr */
} kbj_array;

typedef struct kbj_call {
  int count;
  int critical;
  jlong total;
  kbj_array a[KBJ_MAX_ARRAYS];
} kbj_call;

static jclass kbj_exception_class;
static jmethodID kbj_exception_factory;

SWIGEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  JNIEnv *env;
  jclass local;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  local = (*env)->FindClass(env, "@EXCEPTION_CLASS@");
  if (local == NULL) return JNI_ERR;
  kbj_exception_class = (jclass)(*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  if (kbj_exception_class == NULL) return JNI_ERR;
  /* KernelBridgeException.fromNative(int status, byte[] utf8Message) picks the
   * class (DeviceLostException for KB_STATUS_DEVICE_LOST) and decodes the
   * message as UTF-8 (NewStringUTF would need modified UTF-8). */
  kbj_exception_factory = (*env)->GetStaticMethodID(env, kbj_exception_class, "fromNative",
                                                    "(I[B)L@EXCEPTION_CLASS@;");
  if (kbj_exception_factory == NULL) return JNI_ERR;
  return JNI_VERSION_1_8;
}

static void kbj_throw_java(JNIEnv *env, const char *cls, const char *msg) {
  jclass c = (*env)->FindClass(env, cls);
  if (c != NULL) (*env)->ThrowNew(env, c, msg);
}

/* Throws the KernelBridgeException for a failed call.  The message: the
 * context's last error for a call with a context, else the calling thread's
 * kb_last_error(), read here, in the same native call, right after the failed
 * call (a Java thread may not keep its OS thread between native calls). */
static void kbj_throw(JNIEnv *env, kb_status status, const char *symname, const kb_context *ctx) {
  char buf[200];
  const char *msg = ctx != NULL ? kb_context_last_error(ctx) : kb_last_error();
  jbyteArray bytes;
  jsize n;
  jobject ex;
  if (msg == NULL || msg[0] == '\0') {
    /* The C function's name: the raw variant's name up to "__". */
    const char *end = strstr(symname, "__");
    int len = end != NULL ? (int)(end - symname) : (int)strlen(symname);
    snprintf(buf, sizeof buf, "%.*s failed with status %s", len, symname, kb_status_string(status));
    msg = buf;
  }
  n = (jsize)strlen(msg);
  bytes = (*env)->NewByteArray(env, n);
  if (bytes == NULL) return; /* OutOfMemoryError pending */
  (*env)->SetByteArrayRegion(env, bytes, 0, n, (const jbyte *)msg);
  ex = (*env)->CallStaticObjectMethod(env, kbj_exception_class, kbj_exception_factory, (jint)status, bytes);
  if ((*env)->ExceptionCheck(env)) return;
  (*env)->DeleteLocalRef(env, bytes);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

static size_t kbj_esize(int kind) { return kind == KBJ_I8 ? 1u : kind == KBJ_I16 ? 2u : 4u; }

/* Phase 1 (the "in" typemaps): record an array.  No pinning, no allocation. */
static int kbj_add(JNIEnv *env, kbj_call *c, jarray array, int dir, int kind, void *target) {
  kbj_array *s;
  if (c->count >= KBJ_MAX_ARRAYS) {
    kbj_throw_java(env, "java/lang/IllegalStateException", "kernelbridge: too many arrays in one call");
    return 0;
  }
  s = &c->a[c->count++];
  s->array = array;
  s->len = array != NULL ? (*env)->GetArrayLength(env, array) : 0;
  s->dir = dir;
  s->kind = kind;
  s->owner = -1;
  s->copy_in = 0;
  s->copy_out = 0;
  s->ptr = NULL;
  s->target = target;
  c->total += s->len;
  return 1;
}

static void kbj_get_region(JNIEnv *env, kbj_array *s) {
  switch (s->kind) {
    case KBJ_F32:
      (*env)->GetFloatArrayRegion(env, (jfloatArray)s->array, 0, s->len, (jfloat *)s->ptr);
      break;
    case KBJ_I32:
      (*env)->GetIntArrayRegion(env, (jintArray)s->array, 0, s->len, (jint *)s->ptr);
      break;
    case KBJ_I16:
      (*env)->GetShortArrayRegion(env, (jshortArray)s->array, 0, s->len, (jshort *)s->ptr);
      break;
    default:
      (*env)->GetByteArrayRegion(env, (jbyteArray)s->array, 0, s->len, (jbyte *)s->ptr);
      break;
  }
}

static void kbj_set_region(JNIEnv *env, kbj_array *s) {
  switch (s->kind) {
    case KBJ_F32:
      (*env)->SetFloatArrayRegion(env, (jfloatArray)s->array, 0, s->len, (const jfloat *)s->ptr);
      break;
    case KBJ_I32:
      (*env)->SetIntArrayRegion(env, (jintArray)s->array, 0, s->len, (const jint *)s->ptr);
      break;
    case KBJ_I16:
      (*env)->SetShortArrayRegion(env, (jshortArray)s->array, 0, s->len, (const jshort *)s->ptr);
      break;
    default:
      (*env)->SetByteArrayRegion(env, (jbyteArray)s->array, 0, s->len, (const jbyte *)s->ptr);
      break;
  }
}

static void kbj_release(JNIEnv *env, kbj_call *c, int n, int ok) {
  int i;
  if (c->critical) {
    for (i = n - 1; i >= 0; i--) {
      kbj_array *s = &c->a[i];
      if (s->ptr != NULL)
        (*env)->ReleasePrimitiveArrayCritical(env, s->array, s->ptr, ok && s->dir != KBJ_IN ? 0 : JNI_ABORT);
    }
    return;
  }
  for (i = 0; i < n; i++) {
    kbj_array *s = &c->a[i];
    if (s->owner >= 0 || s->ptr == NULL) continue;
    if (ok && s->copy_out) kbj_set_region(env, s);
    free(s->ptr);
  }
}

/* Phase 2 (the context's "check" typemap, after every "in" typemap): pin or
 * copy all arrays of the call and hand the pointers to the wrapper. */
static int kbj_begin(JNIEnv *env, kbj_call *c) {
  int i, j;
  c->critical = c->total <= KBJ_CRITICAL_MAX_ELEMENTS;
  for (i = 0; i < c->count; i++) {
    kbj_array *s = &c->a[i];
    if (s->array == NULL || s->len == 0) continue;
    if (c->critical) {
      s->ptr = (*env)->GetPrimitiveArrayCritical(env, s->array, NULL);
      if (s->ptr == NULL) {
        kbj_release(env, c, i, 0);
        if (!(*env)->ExceptionCheck(env)) kbj_throw_java(env, "java/lang/OutOfMemoryError", "kernelbridge: cannot pin an array");
        return 0;
      }
      continue;
    }
    /* The same Java array passed twice (in-place use) shares one buffer, so
     * the library sees identical pointers exactly as in the pinned case. */
    for (j = 0; j < i; j++) {
      kbj_array *o = &c->a[j];
      if (o->owner < 0 && o->ptr != NULL && o->kind == s->kind && o->len == s->len &&
          (*env)->IsSameObject(env, o->array, s->array)) {
        s->owner = j;
        s->ptr = o->ptr;
        if (s->dir != KBJ_OUT && !o->copy_in) {
          kbj_get_region(env, o);
          o->copy_in = 1;
        }
        if (s->dir != KBJ_IN) o->copy_out = 1;
        break;
      }
    }
    if (s->owner >= 0) continue;
    s->ptr = malloc((size_t)s->len * kbj_esize(s->kind));
    if (s->ptr == NULL) {
      kbj_release(env, c, i, 0);
      kbj_throw_java(env, "java/lang/OutOfMemoryError", "kernelbridge: cannot allocate an array copy");
      return 0;
    }
    if (s->dir != KBJ_OUT) {
      kbj_get_region(env, s);
      s->copy_in = 1;
    }
    s->copy_out = s->dir != KBJ_IN;
  }
  for (i = 0; i < c->count; i++) memcpy(c->a[i].target, &c->a[i].ptr, sizeof(void *));
  return 1;
}

/* Phase 3 (the "ret" typemap, after the call): unpin, or copy outputs back
 * (only when the call succeeded: a failed call writes nothing). */
static void kbj_end(JNIEnv *env, kbj_call *c, int ok) { kbj_release(env, c, c->count, ok); }

/* The address of a direct buffer's memory, for the facade's scratch buffers. */
static int64_t kbj_address(float *buffer) { return (int64_t)(intptr_t)buffer; }

/* Direct buffers: the address of the buffer's memory, no copy, no pinning. */
static int kbj_direct(JNIEnv *env, jobject buffer, void *target) {
  void *ptr = NULL;
  if (buffer != NULL) {
    ptr = (*env)->GetDirectBufferAddress(env, buffer);
    if (ptr == NULL && (*env)->GetDirectBufferCapacity(env, buffer) != 0) {
      kbj_throw_java(env, "java/lang/IllegalArgumentException", "kernelbridge: not a direct buffer");
      return 0;
    }
  }
  memcpy(target, &ptr, sizeof(void *));
  return 1;
}
"""

_TYPEMAPS = r"""
/* ---- scalars ---- */
%apply long long { int64_t, uint64_t };
%apply int { int32_t };
%apply unsigned int { uint32_t };
@ENUM_APPLY@

/* ---- status: the raw methods return void and throw KernelBridgeException ---- */
%typemap(jni) kbj_status, kbj_status_ctx, kbj_status_arrays "void"
%typemap(jtype) kbj_status, kbj_status_ctx, kbj_status_arrays "void"
%typemap(jstype) kbj_status, kbj_status_ctx, kbj_status_arrays "void"
%typemap(javaout) kbj_status, kbj_status_ctx, kbj_status_arrays { $jnicall; }
%typemap(out) kbj_status ""
/* A context first: the arrays are released right after the call (the "out"
 * typemap runs before the "argout" ones), so that storing an out scalar or a
 * new handle never happens inside a JNI critical region. */
%typemap(out) kbj_status_ctx %{ kbj_end(jenv, &kbj_c, $1 == KB_STATUS_OK); %}
/* No context: the message is the thread's kb_last_error(), read at once. */
%typemap(ret) kbj_status %{ if ($1 != KB_STATUS_OK) kbj_throw(jenv, $1, "$symname", NULL); %}
/* A context first: throw with the context's message (the arrays are released). */
%typemap(ret) kbj_status_ctx %{
  if ($1 != KB_STATUS_OK) kbj_throw(jenv, $1, "$symname", arg1);
%}

/* No context but arrays (opened by the first parameter, below): release the
 * arrays right after the call, before the out scalars and handles are stored
 * (JNI calls are not allowed while arrays are pinned), then throw with the
 * thread's message (JNI calls leave it alone). */
%typemap(out) kbj_status_arrays %{
  kbj_end(jenv, &kbj_c, $1 == KB_STATUS_OK);
%}
%typemap(ret) kbj_status_arrays %{
  if ($1 != KB_STATUS_OK) kbj_throw(jenv, $1, "$symname", NULL);
%}
%typemap(jni) kbj_open_i64 "jlong"
%typemap(jtype) kbj_open_i64 "long"
%typemap(jstype) kbj_open_i64 "long"
%typemap(javain) kbj_open_i64 "$javainput"
%typemap(in) kbj_open_i64 %{
  $1 = (kbj_open_i64)$input;
  kbj_call kbj_c;
  kbj_c.count = 0;
  kbj_c.total = 0;
%}
%typemap(check) kbj_open_i64 %{
  if (!kbj_begin(jenv, &kbj_c)) return $null;
%}

/* ---- the context of a call: a long; it also carries the call's array state ---- */
%typemap(jni) kbj_ctx * "jlong"
%typemap(jtype) kbj_ctx * "long"
%typemap(jstype) kbj_ctx * "long"
%typemap(javain) kbj_ctx * "$javainput"
%typemap(in) kbj_ctx * %{
  $1 = (kbj_ctx *)(intptr_t)$input;
  kbj_call kbj_c;
  kbj_c.count = 0;
  kbj_c.total = 0;
%}
%typemap(check) kbj_ctx * %{
  if (!kbj_begin(jenv, &kbj_c)) return $null;
%}
/* A kernel's context: the raw Java method takes the Context itself, passes its
 * address (IllegalStateException once closed) and keeps it reachable until the
 * native call has returned, so that the facade need not (the Cleaner must not
 * free it under a running kernel). */
%apply kbj_ctx * { kbj_kernel_ctx * };
%typemap(jstype) kbj_kernel_ctx * "Context"
%typemap(javain, post="      java.lang.ref.Reference.reachabilityFence($javainput);") kbj_kernel_ctx * "$javainput.address()"

/* ---- out scalar: element 0 of a long[1], written only on success ---- */
%typemap(jni) kbj_out_i64 * "jlongArray"
%typemap(jtype) kbj_out_i64 * "long[]"
%typemap(jstype) kbj_out_i64 * "long[]"
%typemap(javain) kbj_out_i64 * "$javainput"
%typemap(in) kbj_out_i64 * (int64_t temp) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    kbj_throw_java(jenv, "java/lang/IllegalArgumentException", "kernelbridge: a long[1] is needed for the result");
    return $null;
  }
  temp = 0;
  $1 = &temp;
%}
%typemap(argout) kbj_out_i64 * %{
  if (result == KB_STATUS_OK) {
    jlong value = (jlong)*$1;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &value);
  }
%}

/* ---- out string: the wrapper's own buffer; its bytes (up to the NUL) are
 * copied into the byte[] on success, which the facade decodes as UTF-8 ---- */
%typemap(jni) kbj_string_out * "jbyteArray"
%typemap(jtype) kbj_string_out * "byte[]"
%typemap(jstype) kbj_string_out * "byte[]"
%typemap(javain) kbj_string_out * "$javainput"
%typemap(in) kbj_string_out * (char temp[KBJ_STRING_CAPACITY]) %{
  if ($input == NULL) {
    kbj_throw_java(jenv, "java/lang/IllegalArgumentException", "kernelbridge: a byte[] is needed for the result");
    return $null;
  }
  temp[0] = '\0';
  $1 = temp;
%}
%typemap(argout) kbj_string_out * %{
  if (result == KB_STATUS_OK) {
    jsize cap = (*jenv)->GetArrayLength(jenv, $input);
    jsize n = 0;
    while (n < cap && n < KBJ_STRING_CAPACITY && $1[n] != '\0') n++;
    (*jenv)->SetByteArrayRegion(jenv, $input, 0, n, (const jbyte *)$1);
  }
%}
%typemap(in, numinputs=0) kbj_string_capacity %{ $1 = KBJ_STRING_CAPACITY; %}

/* ---- returns address: a long (never dereferenced by Java) ---- */
%typemap(jni) kbj_data_address * "jlong"
%typemap(jtype) kbj_data_address * "long"
%typemap(jstype) kbj_data_address * "long"
%typemap(javaout) kbj_data_address * { return $jnicall; }
%typemap(out) kbj_data_address * %{ $result = (jlong)(intptr_t)$1; %}
"""

_ARRAY_TYPEMAP = r"""%typemap(jni) @T@ * "@JNI@"
%typemap(jtype) @T@ * "@JAVA@"
%typemap(jstype) @T@ * "@JAVA@"
%typemap(javain) @T@ * "$javainput"
%typemap(in) @T@ * %{
  if (!kbj_add(jenv, &kbj_c, $input, @DIR@, @KIND@, &$1)) return $null;
%}
"""

_DIRECT_TYPEMAP = r"""%typemap(jni) @T@ * "jobject"
%typemap(jtype) @T@ * "java.nio.@BUF@"
%typemap(jstype) @T@ * "java.nio.@BUF@"
%typemap(javain) @T@ * "$javainput"
%typemap(in) @T@ * %{
  if (!kbj_direct(jenv, $input, &$1)) return $null;
%}
"""

_ADDR_TYPEMAP = r"""%typemap(jni) @T@ * "jlong"
%typemap(jtype) @T@ * "long"
%typemap(jstype) @T@ * "long"
%typemap(javain) @T@ * "$javainput"
%typemap(in) @T@ * %{ $1 = ($1_ltype)(intptr_t)$input; %}
"""

_HANDLE_TYPEMAP = r"""%typemap(jni) @H@ *, const @H@ * "jlong"
%typemap(jtype) @H@ *, const @H@ * "long"
%typemap(jstype) @H@ *, const @H@ * "long"
%typemap(javain) @H@ *, const @H@ * "$javainput"
%typemap(in) @H@ *, const @H@ * %{ $1 = ($1_ltype)(intptr_t)$input; %}
/* A new handle comes back in element 0 of a long[1]. */
%typemap(jni) @H@ ** "jlongArray"
%typemap(jtype) @H@ ** "long[]"
%typemap(jstype) @H@ ** "long[]"
%typemap(javain) @H@ ** "$javainput"
%typemap(in) @H@ ** (@H@ *temp) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    kbj_throw_java(jenv, "java/lang/IllegalArgumentException", "kernelbridge: a long[1] is needed for the new handle");
    return $null;
  }
  temp = NULL;
  $1 = &temp;
%}
%typemap(argout) @H@ ** %{
  if (*$1 != NULL) {
    jlong handle = (jlong)(intptr_t)*$1;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &handle);
  }
%}
/* The handle as the first parameter of a context-free call with arrays: it
 * opens the call's array state, as a context does. */
%typemap(jni) kbj_open_@H@ * "jlong"
%typemap(jtype) kbj_open_@H@ * "long"
%typemap(jstype) kbj_open_@H@ * "long"
%typemap(javain) kbj_open_@H@ * "$javainput"
%typemap(in) kbj_open_@H@ * %{
  $1 = (kbj_open_@H@ *)(intptr_t)$input;
  kbj_call kbj_c;
  kbj_c.count = 0;
  kbj_c.total = 0;
%}
%typemap(check) kbj_open_@H@ * %{
  if (!kbj_begin(jenv, &kbj_c)) return $null;
%}
"""


def _dtypes(api: Api) -> List[str]:
    """Tensor dtypes the API uses, in a fixed order."""
    used = {p.tensor.dtype for f in api.functions for p in f.tensors}
    return [d for d in ("f32", "i32", "bf16", "f16", "u8") if d in used]


def _tensor_typedefs(api: Api) -> str:
    lines = []
    for dtype in _dtypes(api):
        for d in _DIRS:
            const = "const " if d == "in" else ""
            if dtype == "u8":
                for v in list(_RAW_ARRAYS) + ["direct", "addr"]:
                    lines.append(f"typedef {const}void kbj_u8_{d}_{v};")
            else:
                c = _DTYPE[dtype].c
                for v in ("", "_direct", "_addr"):
                    lines.append(f"typedef {const}{c} kbj_{dtype}_{d}{v};")
    return "\n".join(lines) + "\n"


def emit_interface(api: Api) -> str:
    max_arrays = max([len(f.tensors) for f in api.functions] + [1])
    runtime = (
        _RUNTIME_C.replace("@CRITICAL_MAX@", str(CRITICAL_MAX_ELEMENTS))
        .replace("@MAX_ARRAYS@", str(max_arrays))
        .replace("@STRING_CAPACITY@", str(STRING_CAPACITY))
        .replace("@EXCEPTION_CLASS@", PACKAGE.replace(".", "/") + "/KernelBridgeException")
        .replace("@TENSOR_TYPEDEFS@", _tensor_typedefs(api))
        .replace("@HANDLE_TYPEDEFS@", "".join(f"typedef {h.name} kbj_open_{h.name};\n" for h in api.handles))
    )
    enums = [e.name for e in api.enums]
    typemaps = _TYPEMAPS.replace("@ENUM_APPLY@", "%apply int { " + ", ".join(enums) + " };" if enums else "")
    parts = [
        banner("//"),
        "//\n",
        "// SWIG interface of the Java binding (docs/java.md).  SWIG turns it into the\n",
        f"// package-private raw layer ({MODULE}, {MODULE}JNI) and the JNI C wrapper at\n",
        "// build time; the public API is the generated facade KernelBridge, Context and\n",
        "// the hand-written DeviceBuffer and Cuda.\n",
        "// Allowlist: everything is ignored except the functions unignored below.\n\n",
        f"%module {MODULE}\n\n",
        "%define %ignoreall %rename(\"$ignore\", regextarget=1, fullname=1) \".*\"; %enddef\n",
        "%define %unignore %rename(\"%s\") %enddef\n",
        "%define %unignoreall %rename(\"%s\", regextarget=1, fullname=1) \".*\"; %enddef\n\n",
        "// The raw layer is internal: package-private classes, loaded with the native library.\n",
        "%pragma(java) jniclassclassmodifiers=\"final class\"\n",
        "%pragma(java) moduleclassmodifiers=\"final class\"\n",
        "%pragma(java) jniclasscode=%{\n",
        "  static {\n",
        "    NativeLoader.load();\n",
        "  }\n",
        "%}\n\n",
        "%{",
        runtime,
    ]
    # Every variant of a function calls the same C function.
    for fn in api.functions:
        for v in _variants(fn):
            if v:
                parts.append(f"#define {_variant_name(fn, v)} {fn.name}\n")
    parts.append("%}\n")
    parts.append(typemaps)
    dtypes = _dtypes(api)
    parts.append("\n/* ---- tensors: Java arrays (pinned or copied, see kbj_begin) ---- */\n")
    for dtype in dtypes:
        elems = [(f"kbj_u8_{{d}}_{k}", e) for k, e in _RAW_ARRAYS.items()] if dtype == "u8" else [(f"kbj_{dtype}_{{d}}", _DTYPE[dtype])]
        for pattern, e in elems:
            for d in _DIRS:
                parts.append(
                    _ARRAY_TYPEMAP.replace("@T@", pattern.format(d=d))
                    .replace("@JNI@", e.jni)
                    .replace("@JAVA@", e.array)
                    .replace("@DIR@", _DIRS[d])
                    .replace("@KIND@", e.kind)
                )
    parts.append("\n/* ---- tensors: direct buffers (zero copy; u8: any direct buffer) ---- */\n")
    for dtype in dtypes:
        buf = "Buffer" if dtype == "u8" else _DTYPE[dtype].buffer
        for d in _DIRS:
            name = f"kbj_u8_{d}_direct" if dtype == "u8" else f"kbj_{dtype}_{d}_direct"
            parts.append(_DIRECT_TYPEMAP.replace("@T@", name).replace("@BUF@", buf))
    parts.append("\n/* ---- tensors: native addresses (the context's scratch, DeviceBuffers) ---- */\n")
    for dtype in dtypes:
        for d in _DIRS:
            name = f"kbj_u8_{d}_addr" if dtype == "u8" else f"kbj_{dtype}_{d}_addr"
            parts.append(_ADDR_TYPEMAP.replace("@T@", name))
    parts.append("\n/* ---- handles: opaque pointers as long ---- */\n")
    for h in api.handles:
        parts.append(_HANDLE_TYPEMAP.replace("@H@", h.name))
    parts.append("\n/* ---- the API, from the annotated header ---- */\n%ignoreall\n\n")
    parts.append("%unignore kbj_address;\nint64_t kbj_address(kbj_f32_out_direct *buffer);\n")
    for fn in api.functions:
        for v in _variants(fn):
            name = _variant_name(fn, v)
            params = ", ".join(_c_param(api, fn, p, v) for p in fn.params) or "void"
            parts.append(f"%unignore {name};\n")
            parts.append(f"{_c_return(fn)}{name}({params});\n")
    parts.append("\n%unignoreall\n")
    return "".join(parts)


# --- Java enums -------------------------------------------------------------------


def emit_enum(e: Enum) -> str:
    cls = enum_class(e)
    lines = [banner("//"), f"package {PACKAGE};\n\n"]
    lines.append(javadoc(e.doc, "", None, [f"<p>Mirrors the C enum {{@code {e.name}}}."]))
    lines.append(f"public enum {cls} {{\n")
    items = []
    for v in e.values:
        short = v.name[len(e.prefix):] if v.name.startswith(e.prefix) else v.name
        items.append(javadoc(v.doc, "  ") + f"  {short}({v.value}, {_java_string(v.doc)})")
    lines.append(",\n".join(items) + ";\n\n")
    lines.append(
        "  private final int code;\n"
        "  private final String description;\n\n"
        f"  {cls}(int code, String description) {{\n"
        "    this.code = code;\n"
        "    this.description = description;\n"
        "  }\n\n"
        f"  /** The value of the C enumerator. */\n"
        "  public int code() {\n"
        "    return code;\n"
        "  }\n\n"
        "  /** The documentation of the C enumerator. */\n"
        "  public String description() {\n"
        "    return description;\n"
        "  }\n\n"
        f"  private static final {cls}[] BY_CODE;\n\n"
        "  static {\n"
        "    int max = 0;\n"
        f"    for ({cls} v : values()) max = Math.max(max, v.code);\n"
        f"    BY_CODE = new {cls}[max + 1];\n"
        f"    for ({cls} v : values()) BY_CODE[v.code] = v;\n"
        "  }\n\n"
        "  /** The constant with this C value, or null when this version does not know it. */\n"
        f"  public static {cls} fromCode(int code) {{\n"
        "    return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;\n"
        "  }\n"
        "}\n"
    )
    return "".join(lines)


def _java_string(s: str) -> str:
    s = " ".join(s.split())
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- facade -----------------------------------------------------------------------


def _expr(e: Expr) -> str:
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Dim):
        return jname(e.name)
    return f"({jname(e.flag)} ? {_expr(e.then)} : {_expr(e.otherwise)})"


def _scalar_java(api: Api, p: Param) -> str:
    if p.ctype.kind == "enum":
        return enum_class(api.enum(p.ctype.name))
    return _JAVA_SCALAR[p.ctype.kind]


def _raw_scalar_arg(api: Api, p: Param, value: str) -> str:
    if p.ctype.kind == "enum":
        return f"{value}.code()"
    return value


def _cap(n: str) -> str:
    return n[:1].upper() + n[1:]


def derived_dims(fn: Function) -> Dict[str, Tuple[str, int]]:
    """Dims the facade reads from a tensor's length: dim -> (tensor, 0).

    The rule: a dim is derived when a tensor that is not nullable is 1-D with
    exactly that dim (its first such tensor, inputs first; see
    derived_dim_sources for the tensors read when that one is null)."""
    return {dim: (names[0], 0) for dim, names in derived_dim_sources(fn).items()}


def derived_dim_sources(fn: Function) -> Dict[str, List[str]]:
    """Every tensor a derived dim can be read from, in order: dim -> [tensor].

    A non-nullable tensor may still be null where it is empty (as NULL in C),
    so the facade reads the dim from the first of these that is not null, and
    takes 0 when all of them are null."""
    return contracts.length_dims(fn)


# The kinds of kernel overloads: Java arrays, direct NIO buffers, DeviceBuffers;
# kernels mixing u8 and other tensors also BYTES_DIRECT (arrays, with the u8
# tensors in direct buffers).
_MODES = ("array", "direct", "device")

_HALF_NOTE = {
    "bf16": "bf16 tensors hold bfloat16 bit patterns in {@code short}s (the upper 16 bits of a float;"
    " see {@link Bf16} for conversions)",
    "f16": "f16 tensors hold IEEE 754 binary16 bit patterns in {@code short}s (see {@link F16} for"
    " conversions)",
}


class _Kernel:
    """Java text of one kernel's facade methods."""

    def __init__(self, api: Api, fn: Function):
        self.api = api
        self.fn = fn
        self.method = camel(fn.short_name)
        self.derived = derived_dims(fn)
        self.derived_sources = derived_dim_sources(fn)
        self.lds = contracts.ld_params(fn)
        self.base: Optional["_Kernel"] = None  # the float32 kernel of a 16-bit variant (set by emit_facade)
        self.modes = _MODES + ((BYTES_DIRECT,) if _mixes_bytes(fn) else ())

    @staticmethod
    def raw_buffer(p: Param, mode: str) -> bool:
        """A u8 tensor passed as any direct Buffer (its bytes)."""
        return p.tensor.dtype == "u8" and mode in ("direct", BYTES_DIRECT)

    @staticmethod
    def nio(p: Param, mode: str) -> bool:
        """A tensor passed as a direct NIO buffer (not an array, not a DeviceBuffer)."""
        return mode == "direct" or (mode == BYTES_DIRECT and p.tensor.dtype == "u8")

    def visible(self) -> List[Param]:
        return [p for p in self.fn.params if p.role != "context" and not (p.role == "dim" and p.name in self.derived)]

    def java_type(self, p: Param, mode: str) -> str:
        if p.role == "tensor":
            if mode == "device":
                return "DeviceBuffer"
            if self.raw_buffer(p, mode):
                return "Buffer"  # raw bytes: any direct buffer, as the buffer transfers take
            e = _elem(p.tensor.dtype)
            return e.buffer if self.nio(p, mode) else e.array
        if p.role == "dim":
            return "long" if mode == "device" else "int"
        if p.role == "flag":
            return "boolean"
        if p.role == "scalar":
            return _scalar_java(self.api, p)
        raise JavaEmitError(f"{self.fn.name}: parameter {p.name} (role {p.role}) has no Java form")

    def signature(self, mode: str, with_ctx: bool) -> str:
        args = [f"{self.java_type(p, mode)} {jname(p.name)}" for p in self.visible()]
        if with_ctx:
            args.insert(0, "Context ctx")
        return ", ".join(args)

    def call_args(self, with_ctx: bool) -> str:
        args = [jname(p.name) for p in self.visible()]
        if with_ctx:
            args.insert(0, "ctx")
        return ", ".join(args)

    def doc(self, mode: str, with_ctx: bool) -> str:
        fn = self.fn
        tags, paras = [], []
        if with_ctx:
            tags.append("@param ctx the context to run on (see {@link Context})")
        for p in self.visible():
            tags.append(f"@param {jname(p.name)} {self.param_doc(p, mode)}")
        derived = []
        for d, (t, _) in self.derived.items():
            tp = fn.param(t)
            if mode == "device":
                size = _elem(tp.tensor.dtype).size
                derived.append(f"{{@code {d}}} = {{@code {jname(t)}.size(){'' if size == 1 else f' / {size}'}}}")
            elif self.raw_buffer(tp, mode):
                derived.append(f"{{@code {d}}} = the bytes of {{@code {jname(t)}}} from its position to its limit")
            else:
                derived.append(f"{{@code {d}}} = {{@code {jname(t)}.{'remaining()' if self.nio(tp, mode) else 'length'}}}")
        if derived:
            paras.append("Derived: " + ", ".join(derived) + " (from the first of its tensors that is not null; 0"
                         " when all are null: a non-nullable tensor may be null only where it is empty).")
        if not with_ctx:
            paras.append("Runs on the calling thread's default context ({@link Context#forCurrentThread()}).")
        raws = [p for p in fn.tensors if p.tensor.dtype == "u8"]
        if mode == "direct":
            paras.append(
                "Buffers must be direct and in native byte order; elements run from each buffer's"
                " position to its limit; positions are not changed."
            )
            if raws:
                paras.append(
                    "The raw bytes of " + ", ".join(f"{{@code {jname(p.name)}}}" for p in raws) + " may be in any"
                    " direct buffer (a {@code ByteBuffer} in either byte order, others in native order)."
                )
        if raws and mode == "array":
            paras.append(
                "The raw bytes of " + ", ".join(f"{{@code {jname(p.name)}}}" for p in raws) + " are a {@code byte[]}."
            )
        if mode == BYTES_DIRECT:
            paras.append(
                "Arrays, except for the raw bytes of " + ", ".join(f"{{@code {jname(p.name)}}}" for p in raws)
                + ": any direct buffer (a {@code ByteBuffer} in either byte order, others in native order), used in"
                " place (a weight memory-mapped from a file), from its position to its limit; positions are not"
                " changed."
            )
        if mode == "device":
            paras.append(
                "Tensors live in {@link DeviceBuffer}s (device memory for a CUDA context, host buffers for a"
                " CPU context), read and written in place.  A tensor starts at its buffer's first byte (use"
                " {@link DeviceBuffer#slice} for another offset); a buffer may be larger than its tensor, but one"
                " a size is derived from must hold a whole number of elements.  Sizes are checked against the"
                " buffers before the native call."
            )
        halves = sorted({p.tensor.dtype for p in fn.tensors if p.tensor.dtype in _HALF_NOTE})
        for h in halves:
            paras.append(_HALF_NOTE[h][:1].upper() + _HALF_NOTE[h][1:] + ".")
        what = {"array": "array", "direct": "buffer", "device": "buffer", BYTES_DIRECT: "array or buffer"}[mode]
        tags.append("@throws KernelBridgeException on failure: SHAPE_MISMATCH for a "
                    + ("buffer smaller than its tensor" if mode == "device" else "length that does not match the shape")
                    + ", INVALID_ARGUMENT for a negative dimension or a null " + what
                    + " for a non-empty tensor, and the statuses of the C function")
        if mode == "device":
            tags.append("@throws IllegalStateException when the context or a buffer is closed")
        # The notes on this overload form one paragraph, a sentence per line.
        return javadoc(fn.doc, "  ", tags, ["<p>" + "\n".join(paras)] if paras else [])

    def param_doc(self, p: Param, mode: str) -> str:
        if p.role == "tensor":
            t = p.tensor
            words = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            s = f"{words}, {t.dtype}{_html(t.shape_str())}"
            if t.dtype == "u8":
                s += " (raw bytes)"
            if t.stride:
                s += f" with item stride {{@code {jname(t.stride)}}} (0: one item for all)"
            if t.ld:
                s += f" with row stride {{@code {jname(t.ld)}}}"
            what = "buffer" if mode == "device" or self.nio(p, mode) else "array"
            if t.aliases:
                s += f"; may be the same {what} as " + ", ".join(f"{{@code {jname(a)}}}" for a in t.aliases)
            if t.nullable:
                s += "; may be null"
            else:
                s += "; null only where empty"
            return s
        if p.role == "dim":
            if p.name in self.lds:
                return f"row stride of {{@code {jname(self.lds[p.name])}}} in elements, at least max(1, its row length)"
            return "dimension, at least 0"
        if p.role == "flag":
            return "flag"
        if p.ctype.kind == "uint64":
            return "unsigned 64-bit value (all 64 bits are used)"
        return "scalar"

    def dim_checks(self, b: List[str]) -> None:
        """The explicit dims are >= 0 (one test: any of them negative makes
        their bitwise OR negative; Checks.negative finds which), then every
        row stride is at least max(1, its row length)."""
        fn = self.fn
        F = f'"{fn.name}"'
        dims = [p for p in fn.dims if p.name not in self.derived]
        if len(dims) == 1:
            n = jname(dims[0].name)
            b.append(f'    if ({n} < 0) throw Checks.negative({F}, "{dims[0].name}", {n});\n')
        elif dims:
            names = ", ".join(p.name for p in dims)
            values = ", ".join(jname(p.name) for p in dims)
            b.append(f'    if (({" | ".join(jname(p.name) for p in dims)}) < 0) throw Checks.negative({F}, "{names}", {values});\n')
        for ld, tname in self.lds.items():
            t = fn.param(tname)
            cols = _expr(t.tensor.shape[-1])
            b.append(f"    if ({jname(ld)} < Math.max(1, {cols})) throw Checks.badStride({F}, \"{ld}\", {jname(ld)}, {cols});\n")

    def required(self, p: Param) -> str:
        """Elements tensor p needs (a Java long expression)."""
        t = p.tensor
        F = f'"{self.fn.name}"'
        item_shape = t.shape[1:] if t.stride is not None else t.shape
        if t.ld is not None:
            item = f"Checks.strided({F}, \"{p.name}\", {_expr(item_shape[0])}, {_expr(item_shape[1])}, {jname(t.ld)})"
        else:
            item = self.size_expr(p, item_shape)
        if t.stride is not None:
            # A batch of items: (count - 1) * stride + the extent of one.
            return f"Checks.batched({F}, \"{p.name}\", {_expr(t.shape[0])}, {item}, {jname(t.stride)})"
        return item

    def derived_lines(self, mode: str) -> List[str]:
        """A derived dim comes from the first of its tensors that is not null
        (null is allowed for an empty tensor, as NULL in C)."""
        F = f'"{self.fn.name}"'
        out = []
        for d, names in self.derived_sources.items():
            expr = "0"
            # The bytes of a direct buffer can exceed an int (a FloatBuffer's remaining() * 4).
            wide = mode == "device" or any(self.raw_buffer(self.fn.param(t), mode) for t in names)
            for t in reversed(names):
                tp = self.fn.param(t)
                if mode == "device":
                    size = _elem(tp.tensor.dtype).size
                    value = f'{jname(t)}.elements({F}, "{t}", {size})'
                elif self.raw_buffer(tp, mode):
                    value = f"Checks.bytes({jname(t)})"
                else:
                    value = f"{jname(t)}.{'remaining()' if self.nio(tp, mode) else 'length'}"
                expr = f"{jname(t)} != null ? {value} : {expr}"
            out.append(f"    final {'long' if wide else 'int'} {jname(d)} = {expr};\n")
        return out

    def tensor_checks(self, mode: str) -> List[str]:
        """One runtime check per tensor: its length (buffers: remaining(),
        DeviceBuffers: size in bytes) against its shape, and null only where
        empty unless nullable."""
        F = f'"{self.fn.name}"'
        out = []
        for p in self.fn.tensors:
            t = p.tensor
            n = jname(p.name)
            args = f'{F}, "{p.name}", {n}, {self.required(p)}'
            shape = _java_string(t.shape_str())
            if mode == "device":
                check = f"Checks.holds({args}, {_elem(t.dtype).size}, {shape})"
            elif t.dtype == "u8":
                check = f"Checks.exactBytes({args}, {shape})"  # a byte[], or a Buffer's bytes
            elif t.ld is not None or t.stride is not None:
                check = f"Checks.atLeast({args}, {shape})"
            else:
                check = f"Checks.exact({args}, {shape})"
            out.append(f"    {'if (' + n + ' != null) ' if t.nullable else ''}{check};\n")
        return out

    def raw_args(self, tensor_arg) -> str:
        args = []
        for p in self.fn.params:
            if p.role == "context":
                args.append("ctx")
            elif p.role == "tensor":
                args.append(tensor_arg(p))
            elif p.role == "dim":
                args.append(jname(p.name))
            else:
                args.append(_raw_scalar_arg(self.api, p, jname(p.name)))
        return ", ".join(args)

    def body(self, mode: str) -> str:
        """The checks, then the native call.  The raw method takes the Context
        (kbj_kernel_ctx: it passes the address and keeps the context reachable
        across the call)."""
        fn = self.fn
        F = f'"{fn.name}"'
        b: List[str] = ['    Objects.requireNonNull(ctx, "ctx");\n']
        # An enum scalar is passed as its code: null has none.
        for p in self.visible():
            if p.role == "scalar" and p.ctype.kind == "enum":
                b.append(f'    Objects.requireNonNull({jname(p.name)}, "{jname(p.name)}");\n')
        b.extend(self.derived_lines(mode))
        self.dim_checks(b)
        b.extend(self.tensor_checks(mode))
        if mode == "device":
            return "".join(b) + self.device_call()
        if mode in ("array", BYTES_DIRECT):
            # The same array as an output and as another tensor is only
            # allowed where the header says alias(...): the C library checks
            # overlap on pointers, which an array copy would hide.
            tensors = [p for p in fn.tensors if not self.nio(p, mode)]
            for i, o in enumerate(tensors):
                if o.tensor.direction == "in":
                    continue
                for j, other in enumerate(tensors):
                    if other is o or _elem(other.tensor.dtype).array != _elem(o.tensor.dtype).array:
                        continue
                    if other.name in o.tensor.aliases:
                        continue
                    if other.tensor.direction != "in" and j < i:
                        continue  # pair already checked from the other side
                    b.append(f'    Checks.notSame({F}, "{o.name}", {jname(o.name)}, "{other.name}", {jname(other.name)});\n')
        if mode in ("direct", BYTES_DIRECT):
            # Each buffer is checked to be direct (writable for outputs) as it
            # is passed, after all the size checks, in parameter order.
            def direct(p: Param) -> str:
                if not self.nio(p, mode):
                    return jname(p.name)
                check = "Checks.direct" if p.tensor.direction == "in" else "Checks.writableDirect"
                if p.tensor.dtype == "u8":
                    check += "Bytes"
                return f'{check}({F}, "{p.name}", {jname(p.name)})'

            suffix = DIRECT_SUFFIX if mode == "direct" else "__" + BYTES_DIRECT
            b.append(f"    {MODULE}.{fn.name}{suffix}({self.raw_args(direct)});\n")
        else:
            b.extend(self.scratch_call())
        return "".join(b)

    def device_call(self) -> str:
        """DeviceBuffer overload: the address variant with the buffers'
        addresses (no JNI function call, no copy).  DeviceBuffer.acquire holds
        each buffer's memory for the call (a close() in another thread waits
        for the release in the finally block, which also runs when a later
        acquire or the call throws; an address of 0 holds nothing), and keeps
        the buffers reachable until the call has returned."""
        fn = self.fn
        F = f'"{fn.name}"'
        tensors = fn.tensors
        local = {p.name: "p" + jname(p.name)[0].upper() + jname(p.name)[1:] for p in tensors}
        b = ["    " + "long " + ", ".join(f"{local[p.name]} = 0" for p in tensors) + ";\n", "    try {\n"]
        for p in tensors:
            b.append(
                f'      {local[p.name]} = DeviceBuffer.acquire({F}, "{p.name}", {jname(p.name)}, {_elem(p.tensor.dtype).size});\n'
            )
        b.append(f"      {MODULE}.{fn.name}{ADDR_SUFFIX}({self.raw_args(lambda p: local[p.name])});\n")
        b.append("    } finally {\n")
        for p in tensors:
            b.append(f"      DeviceBuffer.release({jname(p.name)}, {local[p.name]});\n")
        b.append("    }\n")
        return "".join(b)

    def scratch_call(self) -> List[str]:
        """Small calls: the arrays are staged in the context's off-heap scratch
        (Scratch) and the address variant gets their addresses (no JNI function
        calls); others pass the arrays.  Only for kernels whose tensors all
        have one element size of 4 or 2 bytes (Scratch stages one size per
        call): kernels with raw bytes (u8) or mixed sizes always pass arrays."""
        fn = self.fn
        tensors = fn.tensors
        arrays = self.raw_args(lambda p: jname(p.name))
        sizes = {_elem(p.tensor.dtype).size for p in tensors}
        if len(sizes) != 1 or any(p.tensor.dtype == "u8" for p in tensors):
            return [f"    {MODULE}.{fn.name}({arrays});\n"]
        esize = sizes.pop()
        total = " + ".join(f"Scratch.len({jname(p.name)})" for p in tensors)
        out = [f"    if (Scratch.fits(ctx, {total}, {esize})) {{\n"]
        staged = []
        for i, p in enumerate(tensors):
            n = jname(p.name)
            # In-place use the header allows: the same array is staged once,
            # so the library sees identical pointers.
            shared = [e for e in tensors[:i] if e.tensor.dtype == p.tensor.dtype
                      and (e.name in p.tensor.aliases or p.name in e.tensor.aliases)]
            expr = f"Scratch.{'out' if p.tensor.direction == 'out' else 'in'}(ctx, {n})"
            for e in reversed(shared):
                en = jname(e.name)
                expr = f"{n} == {en} ? p{_cap(en)} : {expr}"
            staged.append(f"p{_cap(n)} = {expr}")
        out.append("      final long " + ", ".join(staged) + ";\n")
        out.append(f"      {MODULE}.{fn.name}{ADDR_SUFFIX}({self.raw_args(lambda p: 'p' + _cap(jname(p.name)))});\n")
        for p in tensors:
            if p.tensor.direction != "in":
                n = jname(p.name)
                out.append(f"      Scratch.back(ctx, {n}, p{_cap(n)});\n")
        out.append("    } else {\n")
        out.append(f"      {MODULE}.{fn.name}({arrays});\n")
        out.append("    }\n")
        return out

    def size_expr(self, p: Param, shape=None) -> str:
        factors = [_expr(e) for e in (p.tensor.shape if shape is None else shape)]
        F = f'"{self.fn.name}"'
        if len(factors) == 1:
            return factors[0]
        # Checks.size takes up to four factors; a longer shape nests them.
        acc = f'Checks.size({F}, "{p.name}", {", ".join(factors[:4])})'
        for i in range(4, len(factors), 3):
            acc = f'Checks.size({F}, "{p.name}", {", ".join([acc] + factors[i:i + 3])})'
        return acc

    def link(self, mode: str) -> str:
        """{@link} to this kernel's overload of `mode` taking a Context."""
        types = ["Context"] + [self.java_type(p, mode) for p in self.visible()]
        return f"{{@link #{self.method}({', '.join(types)})}}"

    def short_doc(self, mode: str, with_ctx: bool) -> Optional[str]:
        """The one-paragraph doc of an overload another one documents in
        full: a default-context overload points at its Context overload, a
        16-bit variant at its float32 kernel's.  None: write the full doc."""
        if not with_ctx:
            return javadoc("", "  ", paras=[
                f"{self.link(mode)} on the calling thread's default context ({{@link Context#forCurrentThread()}})."])
        base = self.base
        if base is None:
            return None
        dtype = next(p.tensor.dtype for p in self.fn.tensors if p.tensor.dtype in _HALF_NOTE)
        note = _HALF_NOTE[dtype]
        return javadoc(self.fn.doc, "  ", paras=[
            f"<p>Arguments, sizes, aliasing and errors as {base.link(mode)}, with 16-bit tensors where it has"
            f" float ones: {note}."])

    def methods(self) -> str:
        out = []
        for mode in self.modes:
            if mode != "device":
                out.append(self.short_doc(mode, False))
                out.append(f"  public static void {self.method}({self.signature(mode, False)}) {{\n")
                args = self.call_args(False)
                out.append(f"    {self.method}(Context.forCurrentThread(){', ' + args if args else ''});\n")
                out.append("  }\n\n")
            out.append(self.short_doc(mode, True) or self.doc(mode, True))
            out.append(f"  public static void {self.method}({self.signature(mode, True)}) {{\n")
            out.append(self.body(mode))
            out.append("  }\n\n")
        return "".join(out)


def _plain_function(api: Api, fn: Function) -> str:
    """A function that uses no handle: a static method.  A kb_status result
    becomes an exception (with the thread's message, read by the native
    wrapper); an out scalar or out string becomes the return value."""
    hidden = set(_hidden_capacities(fn))
    visible = []
    for p in fn.params:
        if p.role in ("out_scalar", "out_string") or (p.role == "dim" and p.name in hidden):
            continue
        if p.role not in ("scalar", "dim", "flag"):
            raise JavaEmitError(f"{fn.name}: no Java form for parameter {p.name} (role {p.role})")
        visible.append(p)

    def jt(p: Param) -> str:
        return "long" if p.role == "dim" else ("boolean" if p.role == "flag" else _scalar_java(api, p))

    name = camel(fn.short_name)
    params = ", ".join(f"{jt(p)} {jname(p.name)}" for p in visible)
    raw_args = []
    for p in fn.params:
        if p.role == "dim" and p.name in hidden:
            continue  # the wrapper passes its own buffer's size
        if p.role in ("out_scalar", "out_string"):
            raw_args.append("out")
        else:
            raw_args.append(_raw_scalar_arg(api, p, jname(p.name)))
    call = f"{MODULE}.{fn.name}({', '.join(raw_args)})"
    r = fn.returns
    status = r.kind == "enum" and r.name == "kb_status"
    pre = []
    for p in visible:
        if p.role == "dim":
            pre.append(f'    if ({jname(p.name)} < 0) throw Checks.negative("{fn.name}", "{p.name}", {jname(p.name)});\n')
        elif p.role == "scalar" and p.ctype.kind == "enum":
            pre.append(f'    Objects.requireNonNull({jname(p.name)}, "{jname(p.name)}");\n')
    if fn.out_scalar is not None:
        jtype = "long"
        body = f"    final long[] out = new long[1];\n    {call};\n    return out[0];\n"
    elif fn.out_string is not None:
        jtype = "String"
        body = f"    final byte[] out = new byte[STRING_CAPACITY];\n    {call};\n    return Checks.cString(out);\n"
    else:
        if r.kind == "string":
            jtype, expr = "String", call
        elif r.kind == "enum" and not status:
            cls = enum_class(api.enum(r.name))
            jtype, expr = cls, f"{cls}.fromCode({call})"
        elif r.kind == "uint32":
            jtype, expr = "int", f"(int) {call}"
        elif r.kind in _JAVA_SCALAR:
            jtype, expr = _JAVA_SCALAR[r.kind], call
        elif status or r.kind == "void":
            jtype, expr = "void", call
        else:
            raise JavaEmitError(f"{fn.name}: no Java form for its return type")
        body = f"    {'return ' if jtype != 'void' else ''}{expr};\n"
    tags = [f"@param {jname(p.name)} {'dimension, at least 0' if p.role == 'dim' else 'flag' if p.role == 'flag' else 'scalar'}"
            for p in visible]
    if status:
        tags.append(f"@throws KernelBridgeException when {fn.name} fails, with the message the library recorded for"
                    " the calling thread (read in the same native call)")
    text = javadoc(fn.doc, "  ", tags)
    text += f"  public static {jtype} {name}({params}) {{\n"
    text += "".join(pre) + body + "  }\n\n"
    return text


def _placement(fn: Function) -> str:
    """Where the Java binding puts a function: "kernel" (KernelBridge overloads),
    "plain" (a KernelBridge static method), "handle" (the class of its one
    handle), "handwritten" (a hand-written class, see HANDWRITTEN) or "skip"."""
    if fn.is_kernel:
        return "kernel"
    handles = _fn_handles(fn)
    for h in handles:
        if h in HANDWRITTEN:
            cls, names = HANDWRITTEN[h]
            if fn.name not in names:
                raise JavaEmitError(
                    f"{fn.name}: {cls}.java is written by hand: add a method for this function there and list it"
                    f" in HANDWRITTEN (tools/kbgen/kbgen/emitters/java.py)"
                )
            return "handwritten"
    if not handles:
        return "skip" if _is_thread_message(fn) else "plain"
    if len(handles) == 1:
        return "handle"
    raise JavaEmitError(f"{fn.name}: no Java form for a function of several handles ({', '.join(handles)})")


def emit_facade(api: Api) -> str:
    kernels = [_Kernel(api, fn) for fn in api.kernels]
    by_name = {k.fn.name: k for k in kernels}
    for k in kernels:
        for suffix in ("_bf16", "_f16"):
            base = by_name.get(k.fn.name[: -len(suffix)]) if k.fn.name.endswith(suffix) else None
            if base is not None and [(p.name, p.role) for p in base.visible()] == [(p.name, p.role) for p in k.visible()]:
                k.base = base  # documented by reference to it
    halves = any(_elem(p.tensor.dtype) is _I16 for fn in api.kernels for p in fn.tensors)
    raws = any(p.tensor.dtype == "u8" for fn in api.kernels for p in fn.tensors)
    out = [banner("//"), f"package {PACKAGE};\n\n"]
    imports = ["java.nio.FloatBuffer", "java.nio.IntBuffer", "java.util.Objects"]
    if halves:
        imports.append("java.nio.ShortBuffer")
    if raws:
        imports.append("java.nio.Buffer")
    out.append("".join(f"import {i};\n" for i in sorted(imports)) + "\n")
    out.append(
        javadoc(
            "",
            "",
            None,
            ["The kernelbridge kernels for Java.",
            "<p>Every kernel has five overloads: Java arrays or direct buffers, each on the calling thread's default"
            " context or on an explicit {@link Context}, and {@link DeviceBuffer}s on an explicit context.  Sizes"
            " that equal the length of a 1-D tensor are read from it; the others are passed explicitly.  Lengths are"
            " checked before the native call; every failure is a {@link KernelBridgeException} carrying a"
            " {@link Status}.  See docs/java.md."]
            + (["<p>Raw-byte (u8) tensors, tensors in a storage format ({@link Dtype}), are {@code byte[]}s, any"
                " direct {@link Buffer} or {@link DeviceBuffer}s, their byte counts derived from them; their kernels"
                " have two more overloads, arrays with the bytes in direct buffers (a weight mapped from a file),"
                " and {@link QTensor} wraps them."] if raws else []),
        )
    )
    out.append("public final class KernelBridge {\n")
    out.append("  private KernelBridge() {}\n\n")
    out.append(f"  /** Version of the header the binding was generated from: {api.version_string}. */\n")
    out.append(f'  public static final String VERSION = "{api.version_string}";\n\n')
    out.append(f"  /** {{@link #VERSION}} as MAJOR * 10000 + MINOR * 100 + PATCH. */\n")
    out.append(f"  public static final int VERSION_NUMBER = {api.version_number};\n\n")
    if any(fn.out_string is not None for fn in api.functions):
        out.append("  /** Bytes of the buffer the native wrapper fills for a string result (NUL included). */\n")
        out.append(f"  private static final int STRING_CAPACITY = {STRING_CAPACITY};\n\n")
    for fn in api.functions:
        if _placement(fn) == "plain":
            out.append(_plain_function(api, fn))
    for k in kernels:
        out.append(k.methods())
    out[-1] = out[-1].rstrip("\n") + "\n"
    out.append("}\n")
    return "".join(out)


# --- handle classes ---------------------------------------------------------------


def emit_context(api: Api) -> Dict[str, str]:
    """One AutoCloseable class per handle type that a function creates (except
    the hand-written ones).  The creating function named <handle>_create is
    the constructor; others named <handle>_create_<x> are static factories
    <x>(...) (kb_context_create_cuda: Context.cuda(device))."""
    files = {}
    for h in api.handles:
        if h.name in HANDWRITTEN:
            continue
        fns = [f for f in api.functions if _placement(f) == "handle" and _fn_handles(f) == [h.name]]
        creators = [f for f in fns if any(p.role == "handle_out" for p in f.params)]
        if not creators:
            if fns:
                raise JavaEmitError(f"{h.name}: functions take it but none creates it; the Java binding needs one")
            continue
        if h.destroy is None:
            raise JavaEmitError(f"{h.name}: the Java binding needs a @destroy")
        primary = [f for f in creators if f.name == h.name + "_create"]
        if len(primary) != 1:
            raise JavaEmitError(
                f"{h.name}: the Java binding needs a creating function named {h.name}_create (the constructor);"
                f" others must be named {h.name}_create_<x> (static factories)"
            )
        factories = [f for f in creators if f is not primary[0]]
        for f in factories:
            if not f.name.startswith(h.name + "_create_"):
                raise JavaEmitError(f"{f.name}: a second creating function of {h.name} must be named {h.name}_create_<x>")
        others = [f for f in fns if f not in creators]
        files[f"{PKG_DIR}/{handle_class(h.name)}.java"] = _handle_class(api, h, primary[0], factories, others)
    return files


def _handle_class(api: Api, h, create: Function, factories: List[Function], others: List[Function]) -> str:
    cls = handle_class(h.name)
    is_context = any(p.role == "context" and p.ctype.name == h.name for f in api.functions for p in f.params)

    def jt(p: Param) -> str:
        return "int" if p.role == "dim" else ("boolean" if p.role == "flag" else _scalar_java(api, p))

    def ctor_params(f: Function) -> List[Param]:
        ps = [p for p in f.params if p.role != "handle_out"]
        for p in ps:
            if p.role not in ("scalar", "dim", "flag"):
                raise JavaEmitError(f"{f.name}: parameter {p.name} has no Java form")
        return ps

    def checks(f: Function, ps: List[Param], indent: str = "    ") -> str:
        text = ""
        for p in ps:
            if p.role == "dim":
                text += f'{indent}if ({jname(p.name)} < 0) throw Checks.negative("{f.name}", "{p.name}", {jname(p.name)});\n'
            elif p.ctype.kind == "enum":
                text += f'{indent}Objects.requireNonNull({jname(p.name)}, "{jname(p.name)}");\n'
        return text

    def raw_args(f: Function) -> str:
        return ", ".join("out" if p.role == "handle_out" else _raw_scalar_arg(api, p, jname(p.name)) for p in f.params)

    def result(f: Function, call: str) -> Tuple[str, str]:
        r = f.returns
        if r.kind == "enum" and r.name == "kb_status":
            return "void", call
        if r.kind == "string":
            return "String", call
        if r.kind == "enum":
            c = enum_class(api.enum(r.name))
            return c, f"{c}.fromCode({call})"
        if r.kind in _JAVA_SCALAR:
            return _JAVA_SCALAR[r.kind], call
        raise JavaEmitError(f"{f.name}: no Java form for its return type")

    params = ctor_params(create)
    sig = ", ".join(f"{jt(p)} {jname(p.name)}" for p in params)
    prefix = strip_prefix(h.name) + "_"
    members = []
    for f in others:
        if f.name == h.destroy:
            continue
        short = strip_prefix(f.name)
        name = camel(short[len(prefix):] if short.startswith(prefix) else short)
        first = f.params[0] if f.params else None
        if len(f.params) == 1 and first.role == "handle":
            # A query: the handle is the only parameter.
            jtype, expr = result(f, f"{MODULE}.{f.name}(a)")
            members.append(
                javadoc(f.doc, "  ")
                + f"  public {jtype} {name}() {{\n"
                + "    final long a = address();\n"
                + "    try {\n"
                + f"      {'return ' if jtype != 'void' else ''}{expr};\n"
                + "    } finally {\n"
                + "      Reference.reachabilityFence(this);\n"
                + "    }\n"
                + "  }\n\n"
            )
            continue
        if first is not None and first.role == "context" and all(p.role in ("scalar", "dim", "flag") for p in f.params[1:]):
            # A method running on this context (kb_context_synchronize).
            ps = f.params[1:]
            args = ", ".join(["a"] + [_raw_scalar_arg(api, p, jname(p.name)) for p in ps])
            jtype, expr = result(f, f"{MODULE}.{f.name}({args})")
            tags = [f"@param {jname(p.name)} {'dimension, at least 0' if p.role == 'dim' else p.role}" for p in ps]
            if f.returns.kind == "enum" and f.returns.name == "kb_status":
                tags.append(f"@throws KernelBridgeException when {f.name} fails (message: {{@link #lastError()}})")
            members.append(
                javadoc(f.doc, "  ", tags)
                + f"  public {jtype} {name}({', '.join(f'{jt(p)} {jname(p.name)}' for p in ps)}) {{\n"
                + checks(f, ps)
                + "    final long a = address();\n"
                + "    try {\n"
                + f"      {'return ' if jtype != 'void' else ''}{expr};\n"
                + "    } finally {\n"
                + "      Reference.reachabilityFence(this);\n"
                + "    }\n"
                + "  }\n\n"
            )
            continue
        raise JavaEmitError(f"{f.name}: no Java form as a method of {cls}")
    default_text = ""
    if is_context:
        # The per-thread default mirrors what a NULL context means in C: the CPU
        # backend and one thread.
        backend = None
        for p in params:
            if p.ctype.kind == "enum":
                e = api.enum(p.ctype.name)
                cpu = [v for v in e.values if v.name.endswith("_CPU")]
                if not cpu:
                    raise JavaEmitError(f"{e.name}: no *_CPU value for the default context")
                backend = (p, enum_class(e) + "." + cpu[0].name[len(e.prefix):])
        default_args = []
        for p in params:
            if backend and p is backend[0]:
                default_args.append(backend[1])
            elif p.role == "dim":
                default_args.append("1")
            else:
                raise JavaEmitError(f"{create.name}: no default for parameter {p.name}")
        default_text = (
            "  private static final ThreadLocal<" + cls + "> THREAD_DEFAULT =\n"
            f"      ThreadLocal.withInitial(() -> new {cls}(newNative({', '.join(default_args)}), true));\n\n"
            "  /**\n"
            "   * The calling thread's default context ("
            + ", ".join(default_args)
            + "), created on first use and\n"
            "   * freed after the thread ends.  The overloads without a context argument use it.  Its\n"
            "   * {@link #close()} does nothing.\n"
            "   */\n"
            f"  public static {cls} forCurrentThread() {{\n"
            "    return THREAD_DEFAULT.get();\n"
            "  }\n\n"
        )
    text = [banner("//"), f"package {PACKAGE};\n\n"]
    imports = ["java.lang.ref.Cleaner", "java.lang.ref.Reference", "java.util.Objects"]
    if is_context:
        imports += ["java.nio.ByteBuffer", "java.nio.ByteOrder", "java.nio.FloatBuffer", "java.nio.IntBuffer", "java.nio.ShortBuffer"]
    text.append("".join(f"import {i};\n" for i in sorted(imports)) + "\n")
    made = "the constructor" + "".join(f" or {{@link #{camel(f.name[len(h.name + '_create_'):])}}}" for f in factories)
    text.append(
        javadoc(
            h.doc,
            "",
            None,
            [f"<p>Wraps a C {{@code {h.name}}}, made by {made}.  Thread-safe: several threads may call kernels on"
            " one object at once (on the CPU, one call at a time uses its worker threads and the others run on"
            " their calling thread, with the same results; on CUDA, calls take turns on its stream).  Close it"
            " (try-with-resources) to free the native object; close() waits for the calls other threads are"
            " making on it, and an object that becomes unreachable unclosed is freed by a {@link Cleaner}."
            "  {@link #close()} is idempotent; using a closed object throws {@link IllegalStateException}."],
        )
    )
    text.append(f"public final class {cls} implements AutoCloseable {{\n")
    text.append("  private static final Cleaner CLEANER = Cleaner.create();\n\n")
    text.append(
        "  /** Owns the native pointer; runs at most once (close or Cleaner). */\n"
        "  private static final class Owner implements Runnable {\n"
        "    volatile long address;\n\n"
        "    Owner(long address) {\n"
        "      this.address = address;\n"
        "    }\n\n"
        "    @Override\n"
        "    public void run() {\n"
        "      long a = address;\n"
        "      address = 0;\n"
        f"      if (a != 0) {MODULE}.{h.destroy}(a);\n"
        "    }\n"
        "  }\n\n"
        "  private final Owner owner;\n"
        "  private final Cleaner.Cleanable cleanable;\n"
        "  private final boolean threadDefault;\n\n"
    )
    ctor_tags = [f"@param {jname(p.name)} {'dimension, at least 0' if p.role == 'dim' else p.role}" for p in params]
    ctor_tags.append(f"@throws KernelBridgeException when {create.name} fails, with the library's message")
    text.append(javadoc(create.doc, "  ", ctor_tags))
    text.append(f"  public {cls}({sig}) {{\n    this(newNative({', '.join(jname(p.name) for p in params)}), false);\n  }}\n\n")
    text.append(f"  private {cls}(long address, boolean threadDefault) {{\n")
    text.append("    this.owner = new Owner(address);\n")
    text.append("    this.cleanable = CLEANER.register(this, owner);\n")
    text.append("    this.threadDefault = threadDefault;\n")
    text.append("  }\n\n")
    text.append(f"  /** {create.name}: a new native object. */\n")
    text.append(f"  private static long newNative({sig}) {{\n")
    text.append("    NativeLoader.load();\n")
    text.append(checks(create, params))
    text.append("    final long[] out = new long[1];\n")
    text.append(f"    {MODULE}.{create.name}({raw_args(create)});\n")
    text.append("    return out[0];\n")
    text.append("  }\n\n")
    for f in factories:
        ps = ctor_params(f)
        fname = camel(f.name[len(h.name + "_create_"):])
        tags = [f"@param {jname(p.name)} {'dimension, at least 0' if p.role == 'dim' else p.role}" for p in ps]
        tags.append(f"@return a new {cls}, to be closed")
        tags.append(f"@throws KernelBridgeException when {f.name} fails, with the library's message")
        text.append(javadoc(f.doc, "  ", tags))
        text.append(f"  public static {cls} {fname}({', '.join(f'{jt(p)} {jname(p.name)}' for p in ps)}) {{\n")
        text.append("    NativeLoader.load();\n")
        text.append(checks(f, ps))
        text.append("    final long[] out = new long[1];\n")
        text.append(f"    {MODULE}.{f.name}({raw_args(f)});\n")
        text.append(f"    return new {cls}(out[0], false);\n")
        text.append("  }\n\n")
    text.append(default_text)
    if is_context:
        text.append(
            "  /**\n"
            "   * Off-heap scratch for small calls: the facade copies arrays of calls with at most\n"
            "   * this many elements in total (twice as many 16-bit ones) here and passes addresses,\n"
            "   * which avoids the JNI array functions (see Scratch and docs/java.md).  One per context,\n"
            "   * used by one thread only: the first thread that stages a call on the context owns it for\n"
            "   * good (a thread's default context: that thread); calls from other threads pass their arrays\n"
            "   * through JNI instead (same results, no shared state).\n"
            "   */\n"
            f"  static final int SCRATCH_ELEMENTS = {SCRATCH_ELEMENTS};\n\n"
            "  /** The scratch's native address; 0 until {@link #scratchAddress()} allocates it. */\n"
            "  long scratchBase;\n"
            "  FloatBuffer scratchFloats;\n"
            "  IntBuffer scratchInts;\n"
            "  ShortBuffer scratchShorts;\n"
            "  /** Elements of the scratch the call being staged has used (Scratch). */\n"
            "  int scratchNext;\n"
            "  /** The thread that owns the scratch, null until one claims it (Scratch.fits). */\n"
            "  volatile Thread scratchOwner;\n\n"
            "  /** The scratch's native address; allocates it on first use. */\n"
            "  long scratchAddress() {\n"
            "    if (scratchBase == 0) {\n"
            "      final ByteBuffer b = ByteBuffer.allocateDirect(4 * SCRATCH_ELEMENTS).order(ByteOrder.nativeOrder());\n"
            "      scratchFloats = b.asFloatBuffer();\n"
            "      scratchInts = b.asIntBuffer();\n"
            "      scratchShorts = b.asShortBuffer();\n"
            f"      scratchBase = {MODULE}.kbj_address(scratchFloats);\n"
            "    }\n"
            "    return scratchBase;\n"
            "  }\n\n"
        )
    text.append(
        "  /** The native pointer; throws IllegalStateException once closed. */\n"
        "  long address() {\n"
        "    final long a = owner.address;\n"
        f'    if (a == 0) throw new IllegalStateException("{cls} is closed");\n'
        "    return a;\n"
        "  }\n\n"
        "  /** Whether {@link #close()} has freed the native object. */\n"
        "  public boolean isClosed() {\n"
        "    return owner.address == 0;\n"
        "  }\n\n"
    )
    text.extend(members)
    text.append(
        f"  /** Frees the native object; idempotent.  Does nothing on a thread's default {cls.lower()}. */\n"
        "  @Override\n"
        "  public void close() {\n"
        "    if (!threadDefault) cleanable.clean();\n"
        "  }\n"
        "}\n"
    )
    return "".join(text)


def emit(api: Api) -> Dict[str, str]:
    names = {f.name for f in api.functions}
    for h, (cls, fns) in HANDWRITTEN.items():
        gone = [f for f in fns if f not in names]
        if gone:
            raise JavaEmitError(
                f"{', '.join(gone)}: no longer in the header, but {cls}.java (hand-written) uses them; update it and"
                " HANDWRITTEN (tools/kbgen/kbgen/emitters/java.py)"
            )
    files = {INTERFACE: emit_interface(api)}
    for e in api.enums:
        files[f"{PKG_DIR}/{enum_class(e)}.java"] = emit_enum(e)
    files.update(emit_context(api))
    files[f"{PKG_DIR}/KernelBridge.java"] = emit_facade(api)
    return files

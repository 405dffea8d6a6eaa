"""Java binding: the SWIG interface and the idiomatic facade.

Outputs (paths relative to the repository root):

  bindings/java/kernelbridge.i          SWIG interface; SWIG runs on it at build
                                         time and produces the package-private raw
                                         layer (KernelBridgeNative, ...NativeJNI) and
                                         the C wrapper.
  bindings/java/src/org/kernelbridge/
    KernelBridge.java                    the public facade: lowerCamelCase static
                                         methods, derived dimensions, length checks.
    Context.java                         one class per handle type (kb_context).
    Status.java, Backend.java            one Java enum per C enum.

The raw layer is described by annotations only: every tensor becomes a typedef
naming its direction and dtype (kbj_f32_in, kbj_i32_out, ...), and typemaps on
those typedefs decide how a Java array or direct buffer reaches C.  See
docs/java.md for the array-passing strategy.
"""

from __future__ import annotations

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

_ARRAY = {"f32": "float[]", "i32": "int[]"}
_BUFFER = {"f32": "FloatBuffer", "i32": "IntBuffer"}
_JNI_ARRAY = {"f32": "jfloatArray", "i32": "jintArray"}
_C_ELEM = {"f32": "float", "i32": "int32_t"}
_KIND = {"f32": "KBJ_F32", "i32": "KBJ_I32"}
_DIRS = {"in": "KBJ_IN", "out": "KBJ_OUT", "inout": "KBJ_INOUT"}

DIRECT_SUFFIX = "__direct"
ADDR_SUFFIX = "__addr"

# Total elements of a call's arrays up to which the facade copies them into the
# context's off-heap scratch and calls the address variant (no JNI function
# calls at all); must match Context.SCRATCH_ELEMENTS.
SCRATCH_ELEMENTS = 1024


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
    return camel(strip_prefix(name), upper=True)


# --- javadoc --------------------------------------------------------------------


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*/", "*&#47;").replace("@", "&#64;")


def javadoc(text: str, indent: str, tags: Optional[List[str]] = None, paras: Optional[List[str]] = None) -> str:
    """A Javadoc comment: `text` (from the header, HTML-escaped), then the
    paragraphs `paras` and the block tags `tags` (both Javadoc already)."""
    lines = _html(text).split("\n") if text else []
    for p in paras or []:
        if lines:
            lines.append("")
        lines.append(p)
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


def _tensor_typedef(p: Param, variant: str) -> str:
    t = p.tensor
    return f"kbj_{t.dtype}_{t.direction}{'_' + variant if variant else ''}"


def _c_param(api: Api, fn: Function, p: Param, variant: str) -> str:
    if p.role == "context":
        return f"kbj_ctx *{p.name}"
    if p.role == "tensor":
        return f"{_tensor_typedef(p, variant)} *{p.name}"
    if p.role == "handle_out":
        return f"{p.handle_type} **{p.name}"
    if p.role == "handle":
        return f"{'const ' if p.ctype.const else ''}{p.ctype.name} *{p.name}"
    return f"{p.ctype.spelling} {p.name}"


def _c_return(fn: Function) -> str:
    if fn.returns.kind == "enum" and fn.returns.name == "kb_status":
        return "kbj_status_ctx " if fn.is_kernel else "kbj_status "
    if fn.returns.kind == "string":
        return "const char *"
    return fn.returns.spelling + " "


_RUNTIME_C = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"

/* Direction of a tensor as the typemaps see it (from the header's in/out/inout). */
#define KBJ_IN 0
#define KBJ_OUT 1
#define KBJ_INOUT 2
#define KBJ_F32 0
#define KBJ_I32 1

/* A call pins its arrays (GetPrimitiveArrayCritical, no copy) when all of them
 * together hold at most this many elements; larger calls copy them with
 * Get/Set<Type>ArrayRegion so that no JNI critical region is held across a
 * long kernel (which would stall the garbage collector). */
#define KBJ_CRITICAL_MAX_ELEMENTS @CRITICAL_MAX@

#define KBJ_MAX_ARRAYS @MAX_ARRAYS@

/* Types the typemaps attach to: one per direction and dtype of a tensor. */
typedef kb_context kbj_ctx;
typedef kb_status kbj_status;
typedef kb_status kbj_status_ctx;
typedef const float kbj_f32_in;
typedef float kbj_f32_out;
typedef float kbj_f32_inout;
typedef const int32_t kbj_i32_in;
typedef int32_t kbj_i32_out;
typedef int32_t kbj_i32_inout;
typedef const float kbj_f32_in_direct;
typedef float kbj_f32_out_direct;
typedef float kbj_f32_inout_direct;
typedef const int32_t kbj_i32_in_direct;
typedef int32_t kbj_i32_out_direct;
typedef int32_t kbj_i32_inout_direct;
typedef const float kbj_f32_in_addr;
typedef float kbj_f32_out_addr;
typedef float kbj_f32_inout_addr;
typedef const int32_t kbj_i32_in_addr;
typedef int32_t kbj_i32_out_addr;
typedef int32_t kbj_i32_inout_addr;

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
static jmethodID kbj_exception_init;

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
  kbj_exception_init = (*env)->GetMethodID(env, kbj_exception_class, "<init>", "(ILjava/lang/String;)V");
  if (kbj_exception_init == NULL) return JNI_ERR;
  return JNI_VERSION_1_8;
}

static void kbj_throw_java(JNIEnv *env, const char *cls, const char *msg) {
  jclass c = (*env)->FindClass(env, cls);
  if (c != NULL) (*env)->ThrowNew(env, c, msg);
}

/* Throws KernelBridgeException(status, message); the message is the context's
 * last error when there is one. */
static void kbj_throw(JNIEnv *env, kb_status status, const char *fn, const kb_context *ctx) {
  char buf[200];
  const char *msg = ctx != NULL ? kb_context_last_error(ctx) : NULL;
  jstring jmsg;
  jobject ex;
  if (msg == NULL || msg[0] == '\0') {
    snprintf(buf, sizeof buf, "%s failed with status %s", fn, kb_status_string(status));
    msg = buf;
  }
  jmsg = (*env)->NewStringUTF(env, msg);
  if (jmsg == NULL) return; /* OutOfMemoryError pending */
  ex = (*env)->NewObject(env, kbj_exception_class, kbj_exception_init, (jint)status, jmsg);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

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
  if (s->kind == KBJ_F32)
    (*env)->GetFloatArrayRegion(env, (jfloatArray)s->array, 0, s->len, (jfloat *)s->ptr);
  else
    (*env)->GetIntArrayRegion(env, (jintArray)s->array, 0, s->len, (jint *)s->ptr);
}

static void kbj_set_region(JNIEnv *env, kbj_array *s) {
  if (s->kind == KBJ_F32)
    (*env)->SetFloatArrayRegion(env, (jfloatArray)s->array, 0, s->len, (const jfloat *)s->ptr);
  else
    (*env)->SetIntArrayRegion(env, (jintArray)s->array, 0, s->len, (const jint *)s->ptr);
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
    s->ptr = malloc((size_t)s->len * 4u);
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
%typemap(jni) kbj_status, kbj_status_ctx "void"
%typemap(jtype) kbj_status, kbj_status_ctx "void"
%typemap(jstype) kbj_status, kbj_status_ctx "void"
%typemap(javaout) kbj_status, kbj_status_ctx { $jnicall; }
%typemap(out) kbj_status, kbj_status_ctx ""
%typemap(ret) kbj_status %{ if ($1 != KB_STATUS_OK) kbj_throw(jenv, $1, "$symname", NULL); %}
/* Kernels: release the arrays first, then throw with the context's message. */
%typemap(ret) kbj_status_ctx %{
  kbj_end(jenv, &kbj_c, $1 == KB_STATUS_OK);
  if ($1 != KB_STATUS_OK) kbj_throw(jenv, $1, "$symname", arg1);
%}

/* ---- the context of a kernel: a long; it also carries the call's array state ---- */
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
"""


def emit_interface(api: Api) -> str:
    max_arrays = max([len(f.tensors) for f in api.kernels] + [1])
    runtime = (
        _RUNTIME_C.replace("@CRITICAL_MAX@", str(CRITICAL_MAX_ELEMENTS))
        .replace("@MAX_ARRAYS@", str(max_arrays))
        .replace("@EXCEPTION_CLASS@", PACKAGE.replace(".", "/") + "/KernelBridgeException")
    )
    enums = [e.name for e in api.enums]
    typemaps = _TYPEMAPS.replace("@ENUM_APPLY@", "%apply int { " + ", ".join(enums) + " };" if enums else "")
    parts = [
        banner("//"),
        "//\n",
        "// SWIG interface of the Java binding (docs/java.md).  SWIG turns it into the\n",
        f"// package-private raw layer ({MODULE}, {MODULE}JNI) and the JNI C wrapper at\n",
        "// build time; the public API is the generated facade KernelBridge.\n",
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
    # Direct-buffer variants of each kernel call the same C function.
    for fn in api.kernels:
        parts.append(f"#define {fn.name}{DIRECT_SUFFIX} {fn.name}\n")
        parts.append(f"#define {fn.name}{ADDR_SUFFIX} {fn.name}\n")
    parts.append("%}\n")
    parts.append(typemaps)
    parts.append("\n/* ---- tensors: Java arrays (pinned or copied, see kbj_begin) ---- */\n")
    for dtype in ("f32", "i32"):
        for d in ("in", "out", "inout"):
            parts.append(
                _ARRAY_TYPEMAP.replace("@T@", f"kbj_{dtype}_{d}")
                .replace("@JNI@", _JNI_ARRAY[dtype])
                .replace("@JAVA@", _ARRAY[dtype])
                .replace("@DIR@", _DIRS[d])
                .replace("@KIND@", _KIND[dtype])
            )
    parts.append("\n/* ---- tensors: direct buffers (zero copy) ---- */\n")
    for dtype in ("f32", "i32"):
        for d in ("in", "out", "inout"):
            parts.append(_DIRECT_TYPEMAP.replace("@T@", f"kbj_{dtype}_{d}_direct").replace("@BUF@", _BUFFER[dtype]))
    parts.append("\n/* ---- tensors: native addresses (the facade's per-context scratch) ---- */\n")
    for dtype in ("f32", "i32"):
        for d in ("in", "out", "inout"):
            parts.append(_ADDR_TYPEMAP.replace("@T@", f"kbj_{dtype}_{d}_addr"))
    parts.append("\n/* ---- handles: opaque pointers as long ---- */\n")
    for h in api.handles:
        parts.append(_HANDLE_TYPEMAP.replace("@H@", h.name))
    parts.append("\n/* ---- the API, from the annotated header ---- */\n%ignoreall\n\n")
    parts.append("%unignore kbj_address;\nint64_t kbj_address(kbj_f32_out_direct *buffer);\n")
    for fn in api.functions:
        variants = [(fn.name, "")]
        if fn.is_kernel:
            variants.append((fn.name + DIRECT_SUFFIX, "direct"))
            variants.append((fn.name + ADDR_SUFFIX, "addr"))
        for name, variant in variants:
            params = ", ".join(_c_param(api, fn, p, variant) for p in fn.params) or "void"
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


class _Kernel:
    """Java text of one kernel's facade methods."""

    def __init__(self, api: Api, fn: Function):
        self.api = api
        self.fn = fn
        self.method = camel(fn.short_name)
        self.derived = derived_dims(fn)
        self.derived_sources = derived_dim_sources(fn)
        self.lds = contracts.ld_params(fn)

    def visible(self) -> List[Param]:
        return [p for p in self.fn.params if p.role != "context" and not (p.role == "dim" and p.name in self.derived)]

    def java_type(self, p: Param, direct: bool) -> str:
        if p.role == "tensor":
            return (_BUFFER if direct else _ARRAY)[p.tensor.dtype]
        if p.role == "dim":
            return "int"
        if p.role == "flag":
            return "boolean"
        if p.role == "scalar":
            return _scalar_java(self.api, p)
        raise JavaEmitError(f"{self.fn.name}: parameter {p.name} (role {p.role}) has no Java form")

    def signature(self, direct: bool, with_ctx: bool) -> str:
        args = [f"{self.java_type(p, direct)} {jname(p.name)}" for p in self.visible()]
        if with_ctx:
            args.insert(0, "Context ctx")
        return ", ".join(args)

    def call_args(self, with_ctx: bool) -> str:
        args = [jname(p.name) for p in self.visible()]
        if with_ctx:
            args.insert(0, "ctx")
        return ", ".join(args)

    def doc(self, direct: bool, with_ctx: bool) -> str:
        fn = self.fn
        tags, paras = [], []
        if with_ctx:
            tags.append("@param ctx the context to run on (see {@link Context})")
        for p in self.visible():
            tags.append(f"@param {jname(p.name)} {self.param_doc(p, direct)}")
        derived = [f"{{@code {d}}} = {{@code {jname(t)}.{'remaining()' if direct else 'length'}}}" for d, (t, _) in self.derived.items()]
        if derived:
            paras.append("<p>Derived: " + ", ".join(derived) + " (from the first of its tensors that is not null; 0"
                         " when all are null: a non-nullable tensor may be null only where it is empty).")
        if not with_ctx:
            paras.append("<p>Runs on the calling thread's default context ({@link Context#forCurrentThread()}).")
        if direct:
            paras.append(
                "<p>Buffers must be direct and in native byte order; elements run from each buffer's"
                " position to its limit; positions are not changed."
            )
        tags.append("@throws KernelBridgeException on failure: SHAPE_MISMATCH for a length that does not match the"
                    " shape, INVALID_ARGUMENT for a negative dimension or a null " + ("buffer" if direct else "array")
                    + " for a non-empty tensor, and the statuses of the C function")
        return javadoc(fn.doc, "  ", tags, paras)

    def param_doc(self, p: Param, direct: bool) -> str:
        if p.role == "tensor":
            t = p.tensor
            words = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            s = f"{words}, {t.dtype}{_html(t.shape_str())}"
            if t.ld:
                s += f" with row stride {{@code {jname(t.ld)}}}"
            if t.aliases:
                s += "; may be the same " + ("buffer" if direct else "array") + " as " + ", ".join(f"{{@code {jname(a)}}}" for a in t.aliases)
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

    def body(self, direct: bool) -> str:
        fn = self.fn
        F = f'"{fn.name}"'
        b: List[str] = []
        b.append('    Objects.requireNonNull(ctx, "ctx");\n')
        length = "remaining()" if direct else "length"
        # A derived dim comes from the first of its tensors that is not null
        # (null is allowed for an empty tensor, as NULL in C; see below).
        for d, names in self.derived_sources.items():
            expr = "0"
            for t in reversed(names):
                expr = f"{jname(t)} != null ? {jname(t)}.{length} : {expr}"
            b.append(f"    final int {jname(d)} = {expr};\n")
        for p in fn.dims:
            if p.name in self.derived:
                continue
            n = jname(p.name)
            b.append(f"    if ({n} < 0) throw Checks.negative({F}, \"{p.name}\", {n});\n")
        for ld, tname in self.lds.items():
            t = fn.param(tname)
            cols = _expr(t.tensor.shape[1])
            b.append(f"    if ({jname(ld)} < Math.max(1, {cols})) throw Checks.badStride({F}, \"{ld}\", {jname(ld)}, {cols});\n")
        for p in fn.tensors:
            t = p.tensor
            n = jname(p.name)
            shape = _java_string(p.tensor.shape_str())
            if t.ld is not None:
                req = f"Checks.strided({F}, \"{p.name}\", {_expr(t.shape[0])}, {_expr(t.shape[1])}, {jname(t.ld)})"
                cond = f"{n}.{length} < {req}"
                fail = f"Checks.tooShort({F}, \"{p.name}\", {n}.{length}, {req}, {shape})"
            else:
                req = self.size_expr(p)
                cond = f"{n}.{length} != {req}"
                fail = f"Checks.mismatch({F}, \"{p.name}\", {n}.{length}, {req}, {shape})"
            # A tensor that defines its only dim cannot mismatch.
            defines = len(t.shape) == 1 and isinstance(t.shape[0], Dim) and self.derived.get(t.shape[0].name, (None,))[0] == p.name
            if t.nullable:
                b.append(f"    if ({n} != null && {cond}) throw {fail};\n")
                continue
            # Not nullable: null only where the tensor is empty (C accepts NULL
            # there); otherwise INVALID_ARGUMENT, as C reports a NULL pointer.
            null = f"Checks.emptyIfNull({F}, \"{p.name}\", {req}, {shape})"
            if defines:
                b.append(f"    if ({n} == null) {null};\n")
            else:
                b.append(f"    if ({n} == null) {null};\n    else if ({cond}) throw {fail};\n")
        if direct:
            for p in fn.tensors:
                n = jname(p.name)
                check = "Checks.direct" if p.tensor.direction == "in" else "Checks.writableDirect"
                b.append(f'    {n} = {check}({F}, "{p.name}", {n});\n')
        else:
            # The same array as an output and as another tensor is only
            # allowed where the header says alias(...): the C library checks
            # overlap on pointers, which an array copy would hide.
            tensors = fn.tensors
            for i, o in enumerate(tensors):
                if o.tensor.direction == "in":
                    continue
                for j, other in enumerate(tensors):
                    if other is o or other.tensor.dtype != o.tensor.dtype:
                        continue
                    if other.name in o.tensor.aliases:
                        continue
                    if other.tensor.direction != "in" and j < i:
                        continue  # pair already checked from the other side
                    a, bb = jname(o.name), jname(other.name)
                    b.append(
                        f"    if ({a} == {bb} && {a} != null && {a}.length > 0) throw Checks.sameArray({F}, \"{o.name}\", \"{other.name}\");\n"
                    )
        args = []
        for p in fn.params:
            if p.role == "context":
                args.append("address")
            elif p.role == "tensor":
                args.append(jname(p.name))
            elif p.role == "dim":
                args.append(jname(p.name))
            else:
                args.append(_raw_scalar_arg(self.api, p, jname(p.name)))
        raw = fn.name + (DIRECT_SUFFIX if direct else "")
        b.append("    final long address = ctx.address();\n")
        b.append("    try {\n")
        if direct or not fn.tensors:
            b.append(f"      {MODULE}.{raw}({', '.join(args)});\n")
        else:
            b.extend(self.scratch_call(args))
        b.append("    } finally {\n")
        b.append("      Reference.reachabilityFence(ctx);\n")
        b.append("    }\n")
        return "".join(b)

    def scratch_call(self, args: List[str]) -> List[str]:
        """Small calls: copy the arrays into the context's off-heap scratch and
        pass addresses (no JNI function calls); others pass the arrays."""
        fn = self.fn
        tensors = fn.tensors
        lens = []
        for p in tensors:
            n = jname(p.name)
            # Every tensor may be null here: nullable ones, and the others
            # where they are empty (checked before).
            lens.append(f"({n} == null ? 0 : {n}.length)")
        total = " + ".join(["(long) " + lens[0]] + lens[1:])
        out = [f"      if ({total} <= Context.SCRATCH_ELEMENTS) {{\n"]
        out.append("        final long base = ctx.scratchAddress();\n")
        dtypes = {p.tensor.dtype for p in tensors}
        if "f32" in dtypes:
            out.append("        final FloatBuffer sf = ctx.scratchFloats;\n")
        if "i32" in dtypes:
            out.append("        final IntBuffer si = ctx.scratchInts;\n")
        out.append("        int next = 0;\n")
        addr_args = {}
        for i, p in enumerate(tensors):
            n = jname(p.name)
            o = "o" + n[:1].upper() + n[1:]
            buf = "sf" if p.tensor.dtype == "f32" else "si"
            # In-place use the header allows: the same array shares one slot,
            # so the library sees identical pointers.
            shared = [e for e in tensors[:i] if e.tensor.dtype == p.tensor.dtype
                      and (e.name in p.tensor.aliases or p.name in e.tensor.aliases)]
            expr = "next"
            for e in reversed(shared):
                en = jname(e.name)
                expr = f"{n} == {en} ? o{en[:1].upper() + en[1:]} : {expr}"
            out.append(f"        final int {o} = {expr};\n")
            guard = f"{n} != null && "
            if shared:
                out.append(f"        if ({guard}{o} == next) {{\n")
            else:
                out.append(f"        if ({n} != null) {{\n")
            out.append(f"          next += {n}.length;\n")
            if p.tensor.direction != "out":
                out.append(f"          {buf}.position({o});\n          {buf}.put({n});\n")
            out.append("        }\n")
            a = f"base + 4L * {o}"
            addr_args[p.name] = f"{n} == null ? 0L : {a}"
        call = []
        for p, a in zip(fn.params, args):
            call.append(addr_args[p.name] if p.role == "tensor" else a)
        out.append(f"        {MODULE}.{fn.name}{ADDR_SUFFIX}({', '.join(call)});\n")
        for p in tensors:
            if p.tensor.direction == "in":
                continue
            n = jname(p.name)
            o = "o" + n[:1].upper() + n[1:]
            buf = "sf" if p.tensor.dtype == "f32" else "si"
            out.append(f"        if ({n} != null) {{\n          {buf}.position({o});\n          {buf}.get({n});\n        }}\n")
        out.append("      } else {\n")
        out.append(f"        {MODULE}.{fn.name}({', '.join(args)});\n")
        out.append("      }\n")
        return out

    def size_expr(self, p: Param) -> str:
        factors = [_expr(e) for e in p.tensor.shape]
        F = f'"{self.fn.name}"'
        if len(factors) == 1:
            return factors[0]
        acc = factors[0]
        for f in factors[1:]:
            acc = f'Checks.mul({F}, "{p.name}", {acc}, {f})'
        return acc

    def methods(self) -> str:
        out = []
        for direct in (False, True):
            out.append(self.doc(direct, False))
            out.append(f"  public static void {self.method}({self.signature(direct, False)}) {{\n")
            args = self.call_args(False)
            out.append(f"    {self.method}(Context.forCurrentThread(){', ' + args if args else ''});\n")
            out.append("  }\n\n")
            out.append(self.doc(direct, True))
            out.append(f"  public static void {self.method}({self.signature(direct, True)}) {{\n")
            out.append(self.body(direct))
            out.append("  }\n\n")
        return "".join(out)


def _plain_function(api: Api, fn: Function) -> str:
    """A function that is not a kernel and uses no handle: a static method."""
    if any(p.role != "scalar" for p in fn.params):
        raise JavaEmitError(f"{fn.name}: no Java form for its parameters")
    name = camel(fn.short_name)
    params = ", ".join(f"{_scalar_java(api, p)} {jname(p.name)}" for p in fn.params)
    args = ", ".join(_raw_scalar_arg(api, p, jname(p.name)) for p in fn.params)
    call = f"{MODULE}.{fn.name}({args})"
    r = fn.returns
    if r.kind == "string":
        jt, expr = "String", call
    elif r.kind == "enum" and r.name != "kb_status":
        cls = enum_class(api.enum(r.name))
        jt, expr = cls, f"{cls}.fromCode({call})"
    elif r.kind == "uint32":
        jt, expr = "int", f"(int) {call}"
    elif r.kind in _JAVA_SCALAR:
        jt, expr = _JAVA_SCALAR[r.kind], call
    elif r.kind == "enum" or r.kind == "void":
        jt, expr = "void", call
    else:
        raise JavaEmitError(f"{fn.name}: no Java form for its return type")
    extra = [f"@param {jname(p.name)} {'scalar'}" for p in fn.params]
    text = javadoc(fn.doc, "  ", extra)
    text += f"  public static {jt} {name}({params}) {{\n"
    text += f"    {'return ' if jt != 'void' else ''}{expr};\n  }}\n\n"
    return text


def emit_facade(api: Api) -> str:
    kernels = [_Kernel(api, fn) for fn in api.kernels]
    out = [banner("//"), f"package {PACKAGE};\n\n"]
    out.append("import java.lang.ref.Reference;\nimport java.nio.FloatBuffer;\nimport java.nio.IntBuffer;\nimport java.util.Objects;\n\n")
    out.append(
        javadoc(
            "",
            "",
            None,
            ["The kernelbridge kernels for Java.",
            "<p>Every kernel has four overloads: Java arrays or direct buffers, each on the calling thread's default"
            " context or on an explicit {@link Context}.  Sizes that equal the length of a 1-D tensor are read from"
            " it; the others are passed explicitly.  Lengths are checked before the native call; every failure is a"
            " {@link KernelBridgeException} carrying a {@link Status}.  See docs/java.md."],
        )
    )
    out.append("public final class KernelBridge {\n")
    out.append("  private KernelBridge() {}\n\n")
    major, minor, patch = api.version
    out.append(f"  /** Version of the header the binding was generated from: {api.version_string}. */\n")
    out.append(f'  public static final String VERSION = "{api.version_string}";\n\n')
    out.append(f"  /** {{@link #VERSION}} as MAJOR * 10000 + MINOR * 100 + PATCH. */\n")
    out.append(f"  public static final int VERSION_NUMBER = {api.version_number};\n\n")
    for fn in api.functions:
        if fn.is_kernel:
            continue
        if any(p.role in ("handle", "handle_out", "context") for p in fn.params):
            continue  # methods of the handle classes
        out.append(_plain_function(api, fn))
    for k in kernels:
        out.append(k.methods())
    out[-1] = out[-1].rstrip("\n") + "\n"
    out.append("}\n")
    return "".join(out)


# --- handle classes ---------------------------------------------------------------


def emit_context(api: Api) -> Dict[str, str]:
    """One AutoCloseable class per handle type that a function creates."""
    files = {}
    for h in api.handles:
        creates = [f for f in api.functions if any(p.role == "handle_out" and p.handle_type == h.name for p in f.params)]
        if not creates:
            continue
        if len(creates) != 1 or h.destroy is None:
            raise JavaEmitError(f"{h.name}: the Java binding needs exactly one creating function and a @destroy")
        files[f"{PKG_DIR}/{handle_class(h.name)}.java"] = _handle_class(api, h, creates[0])
    return files


def _handle_class(api: Api, h, create: Function) -> str:
    cls = handle_class(h.name)
    is_context = any(p.role == "context" and p.ctype.name == h.name for f in api.functions for p in f.params)
    ctor_params = [p for p in create.params if p.role != "handle_out"]
    for p in ctor_params:
        if p.role not in ("scalar", "dim", "flag"):
            raise JavaEmitError(f"{create.name}: parameter {p.name} has no Java form")

    def jt(p):
        return "int" if p.role == "dim" else ("boolean" if p.role == "flag" else _scalar_java(api, p))

    sig = ", ".join(f"{jt(p)} {jname(p.name)}" for p in ctor_params)
    raw_args = []
    for p in create.params:
        if p.role == "handle_out":
            raw_args.append("out")
        else:
            raw_args.append(_raw_scalar_arg(api, p, jname(p.name)))
    checks = ""
    for p in ctor_params:
        if p.role == "dim":
            checks += f'    if ({jname(p.name)} < 0) throw Checks.negative("{create.name}", "{p.name}", {jname(p.name)});\n'
        elif p.ctype.kind == "enum":
            checks += f'    Objects.requireNonNull({jname(p.name)}, "{jname(p.name)}");\n'
    prefix = strip_prefix(h.name) + "_"
    queries = []
    for f in api.functions:
        if len(f.params) != 1 or f.params[0].role != "handle" or f.params[0].ctype.name != h.name:
            continue
        if f.name == h.destroy:
            continue
        short = strip_prefix(f.name)
        name = camel(short[len(prefix):] if short.startswith(prefix) else short)
        call = f"{MODULE}.{f.name}(a)"
        r = f.returns
        if r.kind == "string":
            jtype, expr = "String", call
        elif r.kind == "enum":
            c = enum_class(api.enum(r.name))
            jtype, expr = c, f"{c}.fromCode({call})"
        elif r.kind in _JAVA_SCALAR:
            jtype, expr = _JAVA_SCALAR[r.kind], call
        else:
            raise JavaEmitError(f"{f.name}: no Java form for its return type")
        queries.append(
            javadoc(f.doc, "  ")
            + f"  public {jtype} {name}() {{\n"
            + "    final long a = address();\n"
            + "    try {\n"
            + f"      return {expr};\n"
            + "    } finally {\n"
            + "      Reference.reachabilityFence(this);\n"
            + "    }\n"
            + "  }\n\n"
        )
    default_text = ""
    if is_context:
        # The per-thread default mirrors what a NULL context means in C: the CPU
        # backend and one thread.
        backend = None
        for p in ctor_params:
            if p.ctype.kind == "enum":
                e = api.enum(p.ctype.name)
                cpu = [v for v in e.values if v.name.endswith("_CPU")]
                if not cpu:
                    raise JavaEmitError(f"{e.name}: no *_CPU value for the default context")
                backend = (p, enum_class(e) + "." + cpu[0].name[len(e.prefix):])
        default_args = []
        for p in ctor_params:
            if backend and p is backend[0]:
                default_args.append(backend[1])
            elif p.role == "dim":
                default_args.append("1")
            else:
                raise JavaEmitError(f"{create.name}: no default for parameter {p.name}")
        default_text = (
            "  private static final ThreadLocal<" + cls + "> THREAD_DEFAULT =\n"
            f"      ThreadLocal.withInitial(() -> new {cls}({', '.join(default_args)}, true));\n\n"
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
        imports += ["java.nio.ByteBuffer", "java.nio.ByteOrder", "java.nio.FloatBuffer", "java.nio.IntBuffer"]
    text.append("".join(f"import {i};\n" for i in sorted(imports)) + "\n")
    text.append(
        javadoc(
            h.doc,
            "",
            None,
            [f"<p>Wraps a C {{@code {h.name}}}.  Not thread-safe: use one object from one thread at a time (the"
            " kernels themselves may run concurrently on different objects).  Close it (try-with-resources)"
            " to free the native object at once; an object that becomes unreachable unclosed is freed by a"
            " {@link Cleaner}.  {@link #close()} is idempotent; using a closed object throws"
            " {@link IllegalStateException}."],
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
    text.append(javadoc(create.doc, "  ", [f"@throws KernelBridgeException when {create.name} fails"]))
    text.append(f"  public {cls}({sig}) {{\n    this({', '.join(jname(p.name) for p in ctor_params)}, false);\n  }}\n\n")
    text.append(f"  private {cls}({sig}, boolean threadDefault) {{\n")
    text.append("    NativeLoader.load();\n")
    text.append(checks)
    text.append("    final long[] out = new long[1];\n")
    text.append(f"    {MODULE}.{create.name}({', '.join(raw_args)});\n")
    text.append("    this.owner = new Owner(out[0]);\n")
    text.append("    this.cleanable = CLEANER.register(this, owner);\n")
    text.append("    this.threadDefault = threadDefault;\n")
    text.append("  }\n\n")
    text.append(default_text)
    if is_context:
        text.append(
            "  /**\n"
            "   * Off-heap scratch for small calls: the facade copies arrays of calls with at most\n"
            "   * this many elements in total here and passes addresses, which avoids the JNI\n"
            "   * array functions (see docs/java.md).  One per context, as contexts are used by one\n"
            "   * thread at a time.\n"
            "   */\n"
            f"  static final int SCRATCH_ELEMENTS = {SCRATCH_ELEMENTS};\n\n"
            "  private long scratchAddress;\n"
            "  FloatBuffer scratchFloats;\n"
            "  IntBuffer scratchInts;\n\n"
            "  /** The scratch's native address; allocates it on first use. */\n"
            "  long scratchAddress() {\n"
            "    if (scratchAddress == 0) {\n"
            "      final ByteBuffer b = ByteBuffer.allocateDirect(4 * SCRATCH_ELEMENTS).order(ByteOrder.nativeOrder());\n"
            "      scratchFloats = b.asFloatBuffer();\n"
            "      scratchInts = b.asIntBuffer();\n"
            f"      scratchAddress = {MODULE}.kbj_address(scratchFloats);\n"
            "    }\n"
            "    return scratchAddress;\n"
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
    text.extend(queries)
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
    files = {INTERFACE: emit_interface(api)}
    for e in api.enums:
        files[f"{PKG_DIR}/{enum_class(e)}.java"] = emit_enum(e)
    files.update(emit_context(api))
    files[f"{PKG_DIR}/KernelBridge.java"] = emit_facade(api)
    return files

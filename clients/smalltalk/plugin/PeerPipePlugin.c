/* PeerPipePlugin -- external Squeak VM plugin for peerpipe's Smalltalk client.
 *
 * Converts between packed little-endian IEEE-754 arrays (the wire's bytes, kept in
 * word objects) and Arrays of Floats:
 *   primitiveFloat64sAsArray    PPFloat64Array (2n words)  -> Array of n Floats
 *   primitiveFloat64sFromArray  PPFloat64Array <- Array of n Floats/SmallIntegers
 *   primitiveFloat64sIntoArray  PPFloat64Array -> the n Floats of an Array, in place
 *   primitiveFloat64At          PPFloat64Array, index      -> Float
 *   primitiveFloat64AtPut       PPFloat64Array, index, value (stores, answers value)
 *   primitiveFloat32sAsArray    FloatArray (n words)        -> Array of n Floats
 *   primitiveFloat32sFromArray  FloatArray <- Array of n Floats/SmallIntegers (rounded)
 *   primitiveProxyVersion       -> major * 1000 + minor of the interpreter proxy
 *   primitiveClockMark, primitiveClockElapsedNs: a request's server time (its aux), see below
 * Every primitive validates all of its input before it pops, writes or allocates
 * anything; on bad input it calls primitiveFail() and returns, leaving the stack and
 * the receiver untouched so that the Smalltalk fallback code runs.
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -fPIC -shared -o so.PeerPipePlugin PeerPipePlugin.c
 *
 * ---------------------------------------------------------------------------------
 * The interpreter proxy (struct VirtualMachine) below is laid out from
 *   OpenSmalltalk/opensmalltalk-vm, platforms/Cross/vm/sqVirtualMachine.h
 *   (stored version at commit 028d18f90a515921e8d5845243341b3ad57cf20e),
 * i.e. the entries every proxy 1.x has, in that header's order (they precede the
 * first "#if VM_PROXY_MINOR > 1" block, so any minor >= 0 has them).  The struct is
 * declared up to and including primitiveFail, the last entry used; every entry
 * before it is declared, none is skipped.
 *
 * sqInt: the Squeak VM here (Debian squeak-vm 4.10.2, a 64-bit host running a
 * 32-bit image) is built with SQ_IMAGE32, for which sqMemoryAccess.h says
 * "typedef int sqInt".  The VM's code confirms it: its proxy functions take their
 * arguments in 32-bit registers (%edi, %esi) and return in %eax.  Oops are therefore
 * 32-bit values here; pointers into object bodies (firstIndexableField) are real
 * 64-bit pointers (sqMemoryBase + oop + 4).
 *
 * The layout was also checked against this very VM binary: disassembling its
 * sqGetInterpreterProxy() and resolving each stored function pointer through the
 * dynamic symbol table puts every entry below at the same index (0 minorVersion,
 * 1 majorVersion, 2 pop, ... 70 instantiateClassindexableSize, 72 popRemappableOop,
 * 73 pushRemappableOop, 76 failed, 80 primitiveFail).
 *
 * Entries used (index in the struct):
 *   minorVersion 0, majorVersion 1, pop 2, popthenPush 3, pushInteger 7,
 *   stackValue 11, fetchClassOf 16, fetchPointerofObject 19, firstIndexableField 22,
 *   methodArgumentCount 25, slotSizeOf 29, storePointerofObjectwithValue 34,
 *   isIntegerObject 40, isWords 44, floatObjectOf 48, floatValueOf 49,
 *   integerValueOf 51, nilObject 57, classArray 59, classFloat 63,
 *   instantiateClassindexableSize 70, popRemappableOop 72, pushRemappableOop 73,
 *   primitiveFail 80; for the clock also byteSizeOf 14, isBytes 37, integerObjectOf 50,
 *   classLargePositiveInteger 64.
 *
 * Note: squeakvm.org's later interpreter-VM header (dtlewis290/squeakvm.org,
 * platforms/Cross/vm/sqVirtualMachine.h at cbbe8147368595ce0ee1554d3257a893263239ce)
 * inserts "cloneObject" after "clone" (July 2021) without changing the major version,
 * which shifts every entry from instantiateClassindexableSize on by one.  This layout
 * is NOT for such a VM; it matches squeak-vm 4.10 (checked, see above) and the OpenSmalltalk
 * header.
 *
 * Allocation (instantiateClassindexableSize, floatObjectOf) may run a garbage
 * collection that moves objects.  Oops held in C locals are then stale, and so is
 * any pointer into an object body.  Around every allocation the live oops are
 * pushed on the VM's remap buffer (pushRemappableOop) and popped back, updated,
 * afterwards (popRemappableOop, LIFO); body pointers are re-fetched after each.
 * ---------------------------------------------------------------------------------
 */

#include <stdint.h>
#include <string.h>

typedef int sqInt; /* SQ_IMAGE32: see above */

struct VirtualMachine {
	sqInt (*minorVersion)(void);                                   /*  0 */
	sqInt (*majorVersion)(void);                                   /*  1 */

	/* InterpreterProxy methodsFor: 'stack access' */
	sqInt  (*pop)(sqInt nItems);                                   /*  2 */
	sqInt  (*popthenPush)(sqInt nItems, sqInt oop);                /*  3 */
	sqInt  (*push)(sqInt object);                                  /*  4 */
	sqInt  (*pushBool)(sqInt trueOrFalse);                         /*  5 */
	sqInt  (*pushFloat)(double f);                                 /*  6 */
	sqInt  (*pushInteger)(sqInt integerValue);                     /*  7 */
	double (*stackFloatValue)(sqInt offset);                       /*  8 */
	sqInt  (*stackIntegerValue)(sqInt offset);                     /*  9 */
	sqInt  (*stackObjectValue)(sqInt offset);                      /* 10 */
	sqInt  (*stackValue)(sqInt offset);                            /* 11 */

	/* InterpreterProxy methodsFor: 'object access' */
	sqInt  (*argumentCountOf)(sqInt methodPointer);                /* 12 */
	void  *(*arrayValueOf)(sqInt oop);                             /* 13 */
	sqInt  (*byteSizeOf)(sqInt oop);                               /* 14 */
	void  *(*fetchArrayofObject)(sqInt fieldIndex, sqInt objectPointer); /* 15 */
	sqInt  (*fetchClassOf)(sqInt oop);                             /* 16 */
	double (*fetchFloatofObject)(sqInt fieldIndex, sqInt objectPointer); /* 17 */
	sqInt  (*fetchIntegerofObject)(sqInt fieldIndex, sqInt objectPointer); /* 18 */
	sqInt  (*fetchPointerofObject)(sqInt fieldIndex, sqInt oop);   /* 19 */
	sqInt  (*obsoleteDontUseThisFetchWordofObject)(sqInt fieldFieldIndex, sqInt oop); /* 20 */
	void  *(*firstFixedField)(sqInt oop);                          /* 21 */
	void  *(*firstIndexableField)(sqInt oop);                      /* 22 */
	sqInt  (*literalofMethod)(sqInt offset, sqInt methodPointer);  /* 23 */
	sqInt  (*literalCountOf)(sqInt methodPointer);                 /* 24 */
	sqInt  (*methodArgumentCount)(void);                           /* 25 */
	sqInt  (*methodPrimitiveIndex)(void);                          /* 26 */
	sqInt  (*primitiveIndexOf)(sqInt methodPointer);               /* 27 */
	sqInt  (*sizeOfSTArrayFromCPrimitive)(void *cPtr);             /* 28 */
	sqInt  (*slotSizeOf)(sqInt oop);                               /* 29 */
	sqInt  (*stObjectat)(sqInt array, sqInt fieldIndex);           /* 30 */
	sqInt  (*stObjectatput)(sqInt array, sqInt fieldIndex, sqInt value); /* 31 */
	sqInt  (*stSizeOf)(sqInt oop);                                 /* 32 */
	sqInt  (*storeIntegerofObjectwithValue)(sqInt fieldIndex, sqInt oop, sqInt integer); /* 33 */
	sqInt  (*storePointerofObjectwithValue)(sqInt fieldIndex, sqInt oop, sqInt valuePointer); /* 34 */

	/* InterpreterProxy methodsFor: 'testing' */
	sqInt (*isKindOf)(sqInt oop, char *aString);                   /* 35 */
	sqInt (*isMemberOf)(sqInt oop, char *aString);                 /* 36 */
	sqInt (*isBytes)(sqInt oop);                                   /* 37 */
	sqInt (*isFloatObject)(sqInt oop);                             /* 38 */
	sqInt (*isIndexable)(sqInt oop);                               /* 39 */
	sqInt (*isIntegerObject)(sqInt oop);                           /* 40 */
	sqInt (*isIntegerValue)(sqInt intValue);                       /* 41 */
	sqInt (*isPointers)(sqInt oop);                                /* 42 */
	sqInt (*isWeak)(sqInt oop);                                    /* 43 */
	sqInt (*isWords)(sqInt oop);                                   /* 44 */
	sqInt (*isWordsOrBytes)(sqInt oop);                            /* 45 */

	/* InterpreterProxy methodsFor: 'converting' */
	sqInt  (*booleanValueOf)(sqInt obj);                           /* 46 */
	sqInt  (*checkedIntegerValueOf)(sqInt intOop);                 /* 47 */
	sqInt  (*floatObjectOf)(double aFloat);                        /* 48 */
	double (*floatValueOf)(sqInt oop);                             /* 49 */
	sqInt  (*integerObjectOf)(sqInt value);                        /* 50 */
	sqInt  (*integerValueOf)(sqInt oop);                           /* 51 */
	sqInt  (*positive32BitIntegerFor)(unsigned int integerValue);  /* 52 */
	unsigned int (*positive32BitValueOf)(sqInt oop);               /* 53 */

	/* InterpreterProxy methodsFor: 'special objects' */
	sqInt (*characterTable)(void);                                 /* 54 */
	sqInt (*displayObject)(void);                                  /* 55 */
	sqInt (*falseObject)(void);                                    /* 56 */
	sqInt (*nilObject)(void);                                      /* 57 */
	sqInt (*trueObject)(void);                                     /* 58 */

	/* InterpreterProxy methodsFor: 'special classes' */
	sqInt (*classArray)(void);                                     /* 59 */
	sqInt (*classBitmap)(void);                                    /* 60 */
	sqInt (*classByteArray)(void);                                 /* 61 */
	sqInt (*classCharacter)(void);                                 /* 62 */
	sqInt (*classFloat)(void);                                     /* 63 */
	sqInt (*classLargePositiveInteger)(void);                      /* 64 */
	sqInt (*classPoint)(void);                                     /* 65 */
	sqInt (*classSemaphore)(void);                                 /* 66 */
	sqInt (*classSmallInteger)(void);                              /* 67 */
	sqInt (*classString)(void);                                    /* 68 */

	/* InterpreterProxy methodsFor: 'instance creation' */
	sqInt (*clone)(sqInt oop);                                     /* 69 */
	sqInt (*instantiateClassindexableSize)(sqInt classPointer, sqInt size); /* 70 */
	sqInt (*makePointwithxValueyValue)(sqInt xValue, sqInt yValue); /* 71 */
	sqInt (*popRemappableOop)(void);                               /* 72 */
	sqInt (*pushRemappableOop)(sqInt oop);                         /* 73 */

	/* InterpreterProxy methodsFor: 'other' */
	sqInt (*becomewith)(sqInt array1, sqInt array2);               /* 74 */
	sqInt (*byteSwapped)(sqInt w);                                 /* 75 */
	sqInt (*failed)(void);                                         /* 76 */
	sqInt (*fullDisplayUpdate)(void);                              /* 77 */
	void  (*fullGC)(void);                                         /* 78 */
	void  (*incrementalGC)(void);                                  /* 79 */
	sqInt (*primitiveFail)(void);                                  /* 80 -- last entry used */
	/* showDisplayBitsLeftTopRightBottom, signalSemaphoreWithIndex, success,
	   superclassOf, compilerHookVector, ... follow in the VM's struct; unused here. */
};

/* Every entry used is in the unconditional part of the 1.x struct. */
#define PP_PROXY_MAJOR 1
#define PP_PROXY_MINOR_NEEDED 0

static struct VirtualMachine *interpreterProxy;

const char *getModuleName(void) { return "PeerPipePlugin"; }

sqInt setInterpreter(struct VirtualMachine *anInterpreter)
{
	if (anInterpreter == 0) return 0;
	if (anInterpreter->majorVersion() != PP_PROXY_MAJOR) return 0;
	if (anInterpreter->minorVersion() < PP_PROXY_MINOR_NEEDED) return 0;
	interpreterProxy = anInterpreter;
	return 1;
}

/* ------------------------------------------------------------------ helpers */

#define VM interpreterProxy

static sqInt fail(void)
{
	VM->primitiveFail();
	return 0;
}

/* The method must have been declared with the argument count the primitive
   expects; otherwise the stack offsets below would address the wrong slots. */
static int argCountIs(sqInt n) { return VM->methodArgumentCount() == n; }

/* Number of 32-bit words of a non-pointer word object, or -1 if oop is not one
   (SmallIntegers, pointer objects, byte objects are all rejected). */
static sqInt wordCount(sqInt oop)
{
	if (VM->isIntegerObject(oop)) return -1;
	if (!VM->isWords(oop)) return -1;
	return VM->slotSizeOf(oop);
}

/* Element count of a receiver holding binary64 values: 2n words -> n; -1 if bad. */
static sqInt f64Count(sqInt oop)
{
	sqInt words = wordCount(oop);
	if (words < 0 || (words & 1) != 0) return -1;
	return words / 2;
}

/* Is oop a Float or a SmallInteger?  (Checks only; converts nothing.) */
static int isNumber(sqInt oop)
{
	if (VM->isIntegerObject(oop)) return 1;
	return VM->fetchClassOf(oop) == VM->classFloat();
}

/* Value of a Float or SmallInteger already checked by isNumber().  Float's bits
   come back unchanged (the VM copies them as two 32-bit words). */
static double numberValue(sqInt oop)
{
	if (VM->isIntegerObject(oop)) return (double)VM->integerValueOf(oop);
	return VM->floatValueOf(oop);
}

/* Is arrayOop an Array of exactly n Floats/SmallIntegers? */
static int isNumberArrayOfSize(sqInt arrayOop, sqInt n)
{
	sqInt i;
	if (VM->isIntegerObject(arrayOop)) return 0;
	if (VM->fetchClassOf(arrayOop) != VM->classArray()) return 0;
	if (VM->slotSizeOf(arrayOop) != n) return 0;
	for (i = 0; i < n; i++)
		if (!isNumber(VM->fetchPointerofObject(i, arrayOop))) return 0;
	return 1;
}

/* Element i (0-based) of a binary64 LE body: bytes 8i..8i+7.  memcpy: the body is
   only 4-byte aligned. */
static double loadF64(const unsigned char *body, sqInt i)
{
	double d;
	memcpy(&d, body + 8 * (size_t)i, sizeof d);
	return d;
}

static void storeF64(unsigned char *body, sqInt i, double d)
{
	memcpy(body + 8 * (size_t)i, &d, sizeof d);
}

/* Allocates an Array of n Floats, element i taken from element i of the receiver
   rcvr (a word object) by load(body, i).  Answers the Array, or 0 after
   primitiveFail() if the VM did not allocate.  Returns with rcvr possibly moved;
   the caller must not use its old oop (it uses the stack, which the GC updates). */
static sqInt floatsAsArray(sqInt rcvr, sqInt n, double (*load)(const unsigned char *, sqInt))
{
	sqInt result, floatOop, i;
	double d;

	/* GC-sensitive: allocating the Array may move rcvr; keep it in the remap buffer. */
	VM->pushRemappableOop(rcvr);
	result = VM->instantiateClassindexableSize(VM->classArray(), n);
	rcvr = VM->popRemappableOop();                 /* rcvr's current oop */
	if (result == 0 || result == VM->nilObject()) return fail();

	for (i = 0; i < n; i++) {
		/* Read the element first, through a body pointer fetched now (rcvr may have
		   moved in the previous iteration's allocation). */
		d = load((const unsigned char *)VM->firstIndexableField(rcvr), i);
		/* GC-sensitive: floatObjectOf allocates; protect rcvr and result (LIFO). */
		VM->pushRemappableOop(rcvr);
		VM->pushRemappableOop(result);
		floatOop = VM->floatObjectOf(d);
		result = VM->popRemappableOop();
		rcvr = VM->popRemappableOop();
		/* floatOop is fresh and nothing has allocated since; storePointer keeps the
		   write barrier right (result may have been tenured by a GC above). */
		VM->storePointerofObjectwithValue(i, result, floatOop);
	}
	return result;
}

/* -------------------------------------------------------------- primitives */

/* PPFloat64Array>>asArray  (2n words -> Array of n Floats, bit-identical) */
sqInt primitiveFloat64sAsArray(void)
{
	sqInt rcvr, n, result;
	if (!argCountIs(0)) return fail();
	rcvr = VM->stackValue(0);
	n = f64Count(rcvr);
	if (n < 0) return fail();
	result = floatsAsArray(rcvr, n, loadF64);
	if (result == 0) return 0;                     /* already failed */
	/* rcvr may have moved; the stack slot was updated by the GC, and is popped. */
	VM->popthenPush(1, result);
	return 0;
}

/* PPFloat64Array>>asArrayInto: anArray  (element i into the Float at anArray[i], in place)
   Every element of anArray must be a Float object; else this fails and the Smalltalk
   fallback replaces what is not a Float.  A Float's body holds its most significant 32-bit
   word first (a Float's basicAt: 1 is its high word), whatever the host's order.  No
   allocation: no garbage collection, no oop moves. */
sqInt primitiveFloat64sIntoArray(void)
{
	sqInt rcvr, arg, n, i, floatClass;
	const unsigned char *body;
	if (!argCountIs(1)) return fail();
	arg = VM->stackValue(0);
	rcvr = VM->stackValue(1);
	n = f64Count(rcvr);
	if (n < 0 || VM->isIntegerObject(arg) || VM->fetchClassOf(arg) != VM->classArray()
	    || VM->slotSizeOf(arg) != n) return fail();
	floatClass = VM->classFloat();
	for (i = 0; i < n; i++) {
		sqInt f = VM->fetchPointerofObject(i, arg);
		if (VM->isIntegerObject(f) || VM->fetchClassOf(f) != floatClass) return fail();
	}
	body = (const unsigned char *)VM->firstIndexableField(rcvr);
	for (i = 0; i < n; i++) {
		uint32_t *words = (uint32_t *)VM->firstIndexableField(VM->fetchPointerofObject(i, arg));
		uint64_t bits;
		memcpy(&bits, body + 8 * i, 8);
		words[0] = (uint32_t)(bits >> 32);
		words[1] = (uint32_t)bits;
	}
	VM->pop(1);                                    /* leave anArray as the result */
	VM->popthenPush(1, arg);
	return 0;
}

/* PPFloat64Array>>fromArray: anArray  (each Float/SmallInteger -> binary64 LE) */
sqInt primitiveFloat64sFromArray(void)
{
	sqInt rcvr, arg, n, i;
	unsigned char *body;
	if (!argCountIs(1)) return fail();
	arg = VM->stackValue(0);
	rcvr = VM->stackValue(1);
	n = f64Count(rcvr);
	if (n < 0) return fail();
	/* Validate every element before writing anything. */
	if (!isNumberArrayOfSize(arg, n)) return fail();
	/* No allocation below: oops and body pointer stay valid. */
	body = (unsigned char *)VM->firstIndexableField(rcvr);
	for (i = 0; i < n; i++)
		storeF64(body, i, numberValue(VM->fetchPointerofObject(i, arg)));
	VM->pop(1);                                    /* leave the receiver as result */
	return 0;
}

/* PPFloat64Array>>at: index  (1-based) -> Float */
sqInt primitiveFloat64At(void)
{
	sqInt rcvr, idx, n, i, floatOop;
	double d;
	if (!argCountIs(1)) return fail();
	idx = VM->stackValue(0);
	rcvr = VM->stackValue(1);
	n = f64Count(rcvr);
	if (n < 0) return fail();
	if (!VM->isIntegerObject(idx)) return fail();
	i = VM->integerValueOf(idx);
	if (i < 1 || i > n) return fail();
	/* Read before allocating; afterwards neither rcvr nor its body is used again. */
	d = loadF64((const unsigned char *)VM->firstIndexableField(rcvr), i - 1);
	floatOop = VM->floatObjectOf(d);               /* may GC: only floatOop is live */
	VM->popthenPush(2, floatOop);
	return 0;
}

/* PPFloat64Array>>at: index put: aNumber  -> aNumber */
sqInt primitiveFloat64AtPut(void)
{
	sqInt rcvr, idx, value, n, i;
	if (!argCountIs(2)) return fail();
	value = VM->stackValue(0);
	idx = VM->stackValue(1);
	rcvr = VM->stackValue(2);
	n = f64Count(rcvr);
	if (n < 0) return fail();
	if (!VM->isIntegerObject(idx)) return fail();
	i = VM->integerValueOf(idx);
	if (i < 1 || i > n) return fail();
	if (!isNumber(value)) return fail();
	/* No allocation: the body pointer is used at once. */
	storeF64((unsigned char *)VM->firstIndexableField(rcvr), i - 1, numberValue(value));
	VM->popthenPush(3, value);
	return 0;
}

/* binary32 element i of a native (little-endian) FloatArray body, widened exactly. */
static double loadF32(const unsigned char *body, sqInt i)
{
	float f;
	memcpy(&f, body + 4 * (size_t)i, sizeof f);
	return (double)f;
}

/* FloatArray>>asArray of Floats */
sqInt primitiveFloat32sAsArray(void)
{
	sqInt rcvr, n, result;
	if (!argCountIs(0)) return fail();
	rcvr = VM->stackValue(0);
	n = wordCount(rcvr);
	if (n < 0) return fail();
	result = floatsAsArray(rcvr, n, loadF32);
	if (result == 0) return 0;                     /* already failed */
	VM->popthenPush(1, result);
	return 0;
}

/* FloatArray>>fromArray: anArray  (each rounded to binary32, nearest-even) */
sqInt primitiveFloat32sFromArray(void)
{
	sqInt rcvr, arg, n, i;
	unsigned char *body;
	float f;
	if (!argCountIs(1)) return fail();
	arg = VM->stackValue(0);
	rcvr = VM->stackValue(1);
	n = wordCount(rcvr);
	if (n < 0) return fail();
	if (!isNumberArrayOfSize(arg, n)) return fail();
	/* No allocation below. */
	body = (unsigned char *)VM->firstIndexableField(rcvr);
	for (i = 0; i < n; i++) {
		f = (float)numberValue(VM->fetchPointerofObject(i, arg));
		memcpy(body + 4 * (size_t)i, &f, sizeof f);
	}
	VM->pop(1);
	return 0;
}

/* -> major * 1000 + minor of the interpreter proxy this plugin was given */
sqInt primitiveProxyVersion(void)
{
	sqInt v = VM->majorVersion() * 1000 + VM->minorVersion();
	VM->pop(VM->methodArgumentCount() + 1);
	VM->pushInteger(v);
	return 0;
}

/* The server's time for a request (its reply's aux) without the image's clock, which answers
 * LargeIntegers and costs microseconds a read here:
 *   primitiveClockMark        receiver a ByteArray of at least 8 bytes: stores CLOCK_MONOTONIC
 *                             in nanoseconds (native uint64) in its first 8; answers it
 *   primitiveClockElapsedNs   receiver that ByteArray: nanoseconds since the mark, a
 *                             SmallInteger, or a LargePositiveInteger above 2^30 - 1 */
#include <time.h>

static int isMarkArray(sqInt oop)
{
	return !VM->isIntegerObject(oop) && VM->isBytes(oop) && VM->byteSizeOf(oop) >= 8;
}

static uint64_t monotonicNs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

sqInt primitiveClockMark(void)
{
	sqInt rcvr;
	uint64_t now;
	if (!argCountIs(0)) return fail();
	rcvr = VM->stackValue(0);
	if (!isMarkArray(rcvr)) return fail();
	now = monotonicNs();
	memcpy(VM->firstIndexableField(rcvr), &now, sizeof now);
	return 0; /* the receiver stays on the stack as the answer */
}

sqInt primitiveClockElapsedNs(void)
{
	sqInt rcvr, result;
	uint64_t mark, ns;
	if (!argCountIs(0)) return fail();
	rcvr = VM->stackValue(0);
	if (!isMarkArray(rcvr)) return fail();
	memcpy(&mark, VM->firstIndexableField(rcvr), sizeof mark);
	ns = monotonicNs() - mark;
	if (ns <= 0x3FFFFFFF) { /* a SmallInteger holds 31 bits here */
		VM->popthenPush(1, VM->integerObjectOf((sqInt)ns));
		return 0;
	}
	/* A LargePositiveInteger: its little-endian bytes, with no zero byte on top (normalized).
	 * The allocation may collect garbage; nothing is held across it but ns. */
	{
		sqInt len = 4;
		while (len < 8 && (ns >> (8 * len)) != 0) len++;
		result = VM->instantiateClassindexableSize(VM->classLargePositiveInteger(), len);
		for (sqInt i = 0; i < len; i++)
			((unsigned char *)VM->firstIndexableField(result))[i] = (unsigned char)(ns >> (8 * i));
	}
	VM->popthenPush(1, result);
	return 0;
}

/*
 * xbypass.pml - BYPASS (SHARED in src/eventfd_shared.c) with two bypasses at once:
 * models/xmirror.pml's writer and reader, and a third process that makes
 * one write and is stopped at any step of it (maybe continued later), so
 * that the writer (one write here) and the reader may both bypass its
 * lock, each racing with the other's raise and drain.  The properties are xmirror.pml's;
 * a non-semaphore counter only (the raises, drains and looks of BYPASS are
 * the same for both; xmirror.pml has the semaphore's steps); FULL is 5,
 * so that three raises of a unit each (one per process, made
 * on looks that found K at 0) stay below it, as they do in the C code.
 * PAN_FLAGS: -E
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_NO_RELOOK       a bypassing read that drained K does not look
 *                          at the counter again (a bypassing write's unit,
 *                          raised after its own look, was taken)
 *   MUTANT_NO_POSTLOOK     a bypassing write from 0 does not look at K
 *                          after its CAS (a drain decided before took the
 *                          unit it raised before)
 *   MUTANT_NO_MARGIN       a holder's FILL leaves no room in its first
 *                          step for a second raise that looked at K before
 *                          it wrote (K passes FULL)
 */
#define THREE 1
#define FULL 5
#ifdef MUTANT_NO_MARGIN
#define MARGIN 0
#else
#define MARGIN 1
#endif
#ifdef MUTANT_NO_RELOOK
#define NO_RELOOK 1
#endif
#ifdef MUTANT_NO_POSTLOOK
#define NO_POSTLOOK 1
#endif
#include "xmirror.pml"

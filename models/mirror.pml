/*
 * mirror.pml - the MIRROR protocol of a ueventfd (src/eventfd.c), for the
 * spin model checker.  The counter lives in userspace; the kernel eventfd
 * (the mirror, the fd the user polls) holds units whose class follows the
 * counter's: readable iff count > 0, not writable iff count is full.
 * Two writers (one writes 1, one fills the counter), a non-blocking reader
 * and a sleeper (a blocking reader); checked exhaustively, for a semaphore
 * and a non-semaphore ueventfd (its kernel fd made with the same
 * EFD_SEMAPHORE):
 *  - at quiescence the mirror agrees with the counter: (count > 0) ==
 *    (K > 0), (count == FULL) == (K >= FULL), and kunits == K;
 *  - at every step kunits >= K, K <= FULL (a write(2) to the kernel fd
 *    never blocks) and kunits never goes below 0;
 *  - the sleeper is never left asleep in read(2) while count > 0;
 *  - every value written is read once: consumed + count == produced.
 *
 * Shared state:
 *   count   the ueventfd's counter (atomic); FULL stands for UEFD_MAX,
 *           0xfffffffffffffffe
 *   kunits  units the library put in the kernel fd and has not taken back,
 *           counting those whose write(2) is in flight: raised by CAS
 *           before the write, lowered by fetch_sub after a read that took
 *           them, so kunits >= K always
 *   K       the kernel eventfd's counter: a write(2) adds to it in one
 *           step; a read(2) takes all of it (1 if semaphore); a nowait
 *           read of 0 is EAGAIN, a blocking one sleeps until K > 0
 * CLS(x) is 0, 1 (some) or 2 (FULL).  uefd__sync loops: load count, load
 * kunits; done if the classes agree; else one step: too few units, CAS
 * kunits k -> 1 (or FULL when the counter is full) and write the
 * difference; too many, a nowait read and a fetch_sub of what it took, or,
 * if the read finds K == 0, return: the units are in flight, and the
 * writer that raised kunits, or the reader that took them, syncs after.
 * Writers add to count (never beyond FULL: a write that would is EAGAIN)
 * and sync.  A reader that finds count > 0 takes (all, or 1) and syncs.
 * One that finds it empty answers EAGAIN, or reads the kernel fd (nowait
 * for the reader, blocking for the sleeper), gives back what it took and
 * looks at the counter again.
 * Where src/eventfd.c and the first statement of the protocol differ, the
 * model lets each step go either way, so both are checked: sync may load
 * the counter again before its step (DEMOTE's gate; it then drains when
 * the classes agree); a full counter over kunits == 0 is raised to 1 then
 * to FULL, or to FULL at once; the sleeper syncs before it sleeps, or not.
 * Each statement is one atomic step of the C code (a seq_cst load, an RMW,
 * a system call); an atomic block with a guard on shared state is a load
 * with what it decides, or a CAS.
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_WRITE_FIRST      the raise writes to K before its CAS of kunits
 *   MUTANT_NO_RETRY         sync returns after one step, not looping
 *   MUTANT_CLEAR_FIRST      the drain lowers kunits before its read
 *   MUTANT_SLEEPER_NO_SYNC  a reader does not sync after the take that
 *                           follows its read of the kernel fd
 */
#define FULL 3		/* UEFD_MAX */
#ifndef NRD
#define NRD  1		/* values the non-blocking reader takes, at most */
#endif

byte count;
byte kunits;
byte K;
bit sem;		/* EFD_SEMAPHORE, of both */
bit sleeping;		/* the sleeper is in its blocking read(2) */
byte produced;
byte consumed;

#define CLS(x)	((x) == 0 -> 0 : ((x) == FULL -> 2 : 1))
#define UP	(CLS(c) > CLS(k))

/* uefd__sync; c, k, v are the caller's locals, 0 again on return. */
inline sync() {
	do
	:: c = count;
		if
		:: atomic { CLS(c) == CLS(kunits) -> c = 0 } -> break
		:: atomic { else -> k = kunits }
		fi;
		if
		:: skip
		:: c = count		/* eventfd.c: again, inside the gate */
		fi;
		if
#ifdef MUTANT_WRITE_FIRST
		:: atomic { UP ->
			if
			:: c == FULL -> v = FULL
			:: k == 0 -> v = 1
			fi;
			K = K + v - k; assert(K <= FULL); assert(kunits >= K) } ->
			if
			:: atomic { kunits == k -> kunits = v; c = 0; k = 0; v = 0 }
			:: atomic { kunits != k -> c = 0; k = 0; v = 0 }
			fi
#else
		:: atomic { UP && kunits == k ->		/* CAS */
			if
			:: c == FULL -> v = FULL
			:: k == 0 -> v = 1
			fi;
			kunits = v } ->
			atomic { K = K + v - k; assert(K <= FULL); assert(kunits >= K); c = 0; k = 0; v = 0 }
		:: atomic { UP && kunits != k -> c = 0; k = 0 }
#endif
#ifdef MUTANT_CLEAR_FIRST
		:: atomic { !UP -> v = (sem -> 1 : k); assert(kunits >= v); kunits = kunits - v; c = 0; k = 0; v = 0 } ->
			if
			:: atomic { K == 0 -> skip } -> break	/* EAGAIN */
			:: atomic { K > 0 -> K = (sem -> K - 1 : 0); assert(kunits >= K) }
			fi
#else
		:: atomic { !UP && K == 0 -> c = 0; k = 0 } -> break	/* EAGAIN */
		:: atomic { !UP && K > 0 -> v = (sem -> 1 : K); K = K - v; c = 0; k = 0 } ->
			atomic { assert(kunits >= v); kunits = kunits - v; assert(kunits >= K); v = 0 }
#endif
		fi
#ifdef MUTANT_NO_RETRY
		; break
#endif
	od
}

/* A read's take (CAS on count > 0); the reader syncs after it. */
#define TAKE	consumed = consumed + (sem -> 1 : count); count = (sem -> count - 1 : 0)

/* One write: of 1, or of what fills the counter; EAGAIN when full. */
proctype writer(bit fill)
{
	byte c, k, v;

	if
	:: atomic { count < FULL -> v = (fill -> FULL - count : 1); count = count + v; produced = produced + v; v = 0 } ->
		sync()
	:: atomic { count == FULL -> skip }	/* EAGAIN */
	fi
}

/* Non-blocking reads.  On an empty counter: EAGAIN at once (the first
 * empty read after a successful one), or a nowait read of the kernel fd;
 * after one that took units, fetch_sub and look at the counter again. */
proctype reader()
{
	byte c, k, v, n = NRD;

	do
	:: atomic { n > 0 && count > 0 -> TAKE; n-- } ->
		sync()
	:: atomic { n == 0 -> skip } -> break
	:: atomic { n > 0 && count == 0 -> skip } ->
		if
		:: break			/* EAGAIN, no system call */
		:: atomic { K == 0 -> skip } -> break	/* EAGAIN */
		:: atomic { K > 0 -> v = (sem -> 1 : K); K = K - v } ->
			atomic { assert(kunits >= v); kunits = kunits - v; assert(kunits >= K); v = 0 }
		fi
	od
}

/* A blocking read: take if count > 0; else sleep in read(2) on the kernel
 * fd until a sync puts units in it, give them back, and look again. */
proctype sleeper()
{
	byte c, k, v;
#ifdef MUTANT_SLEEPER_NO_SYNC
	bit slept;
#endif

	do
	:: atomic { count > 0 -> TAKE } ->
#ifdef MUTANT_SLEEPER_NO_SYNC
		if
		:: slept -> skip
		:: else -> sync()
		fi;
#else
		sync();
#endif
		break
	:: atomic { count == 0 -> skip } ->
		if
		:: sync()
		:: skip				/* eventfd.c */
		fi;
		sleeping = 1;
end_sleep:	atomic { K > 0 -> v = (sem -> 1 : K); K = K - v; sleeping = 0;
#ifdef MUTANT_SLEEPER_NO_SYNC
			slept = 1
#endif
		};
		atomic { assert(kunits >= v); kunits = kunits - v; assert(kunits >= K); v = 0 }
	od
}

/* Runs only when nothing else can move: the sleeper asleep or done. */
proctype monitor()
{
	timeout ->
	assert(!(sleeping && count > 0));
	assert((count > 0) == (K > 0));
	assert((count == FULL) == (K >= FULL));
	assert(kunits == K);
	assert(consumed + count == produced)
}

init
{
	atomic {
		if
		:: sem = 0
		:: sem = 1
		fi;
		run writer(0);
		run writer(1);
		run reader();
		run sleeper();
		run monitor()
	}
}

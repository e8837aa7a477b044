/*
 * rnap.pml - NAP of a ueventfd's blocked reader (src/eventfd.c, uefd__nap;
 * issue 19), for the spin model checker.  A reader of a UEVENTFD_NOPOLL
 * ueventfd that finds the counter empty sleeps on the futex word rwake,
 * counted in xsleepers, instead of in read(2) on the kernel fd; whatever
 * may end its wait must wake it:
 *  - a write: CAS of the counter, then a load of xsleepers, and if it is
 *    non-zero rwake++ and FUTEX_WAKE (uefd__xwake);
 *  - a coalesced write (its wakeups deferred): CAS, then if it sees a
 *    napper it arms the timer (sets `pending` unless set); the timer
 *    clears `pending`, then looks at the counter and at xsleepers and
 *    wakes (uefd__deliver: PENDING in timer.c); a write that finds it
 *    armed (an earlier write's) leaves it to that run;
 *  - a demotion: exchange of the counter for GONE, then the wake
 *    (uefd__mirror_quiesce); the reader then reads the kernel fd;
 *  - uefd_share (a fork): store of `shared`, then the wake; the reader
 *    then sleeps as SHARED's readers do (with a timeout).
 * The napper reads rwake first, then counts itself, then looks at the
 * counter and at `shared`; FUTEX_WAIT sleeps only if rwake still holds
 * what it read (checked and slept in one step, as the kernel does under
 * its hash-bucket lock), and FUTEX_WAKE wakes every sleeper of the word.
 * Checked exhaustively (two nappers, a plain and a coalesced writer, and
 * none, a demotion or a share): when nothing can move, no napper is asleep
 * while the counter is non-zero, GONE, or shared.
 * Each statement is one atomic step of the C code (a seq_cst load, an RMW,
 * a system call).
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_LOOK_FIRST     the napper looks at the counter before it counts
 *                         itself in xsleepers
 *   MUTANT_SEQ_AFTER      the napper reads rwake after its look
 *   MUTANT_WAKE_FIRST     a write loads xsleepers before its CAS
 *   MUTANT_NO_ARM         a coalesced write that sees a napper does not arm
 *                         the timer (the mirror's class agrees, as NOPOLL's
 *                         stale unit makes it)
 *   MUTANT_TIMER_LOOK     the timer looks before it clears `pending`
 *   MUTANT_NO_QUIESCE     demotion and share do not wake the nappers
 */
#define NN 2		/* nappers */
#define GONE 255

byte count;
byte xsleepers;
byte rwake;
bit shared;
bit pending;
bit asleep[NN];
byte ended;		/* nappers done (took a value, or left the nap) */

inline wake() {
	rwake++;
	asleep[0] = 0;
	asleep[1] = 0
}

proctype napper(byte me)
{
	byte seq;
	bit go;

	do
	:: atomic { count > 0 && count != GONE -> count = 0 } -> break
	:: atomic { count == GONE || shared -> skip } -> break	/* kernel fd / SHARED */
	:: atomic { count == 0 && !shared -> skip } ->
#ifdef MUTANT_LOOK_FIRST
		go = (count == 0 && !shared);
		seq = rwake;
		xsleepers++;
#else
#ifdef MUTANT_SEQ_AFTER
		xsleepers++;
		go = (count == 0 && !shared);
		seq = rwake;
#else
		seq = rwake;
		xsleepers++;
		go = (count == 0);
		go = go && !shared;
#endif
#endif
		if
		:: go ->
			if
			:: atomic { rwake == seq -> asleep[me] = 1 } ->
end_sleep:			!asleep[me]
			:: atomic { rwake != seq -> skip }	/* EAGAIN */
			fi
		:: else -> skip
		fi;
		xsleepers--;
		go = 0
	od;
	ended++
}

proctype writer()
{
	byte s;

#ifdef MUTANT_WAKE_FIRST
	s = xsleepers;
#endif
	if
	:: atomic { count == GONE -> skip }	/* the kernel fd's write */
	:: atomic { count != GONE -> count++ } ->
#ifndef MUTANT_WAKE_FIRST
		s = xsleepers;
#endif
		if
		:: atomic { s > 0 -> wake() }
		:: else
		fi
	fi
}

/* A coalesced write: its wakeup is the timer's. */
proctype cwriter()
{
	byte s;

	if
	:: atomic { count == GONE -> skip }
	:: atomic { count != GONE -> count++ } ->
		s = xsleepers;
#ifdef MUTANT_NO_ARM
		s = 0;
#endif
		if
		:: atomic { s > 0 && pending == 0 -> pending = 1 }
		:: atomic { s > 0 && pending == 1 -> skip }	/* armed */
		:: else
		fi
	fi
}

proctype timer()
{
	byte c, s;

end_idle:
	do
	:: pending == 1 ->
#ifdef MUTANT_TIMER_LOOK
		c = count;
		s = xsleepers;
		pending = 0;
#else
		pending = 0;
		c = count;
		s = xsleepers;
#endif
		if
		:: atomic { c > 0 && s > 0 -> wake() }
		:: else
		fi;
		c = 0;
		s = 0
	od
}

proctype demoter()
{
	byte s;

	count = GONE;
	s = xsleepers;
#ifndef MUTANT_NO_QUIESCE
	if
	:: atomic { s > 0 -> wake() }
	:: else
	fi
#endif
}

proctype sharer()
{
	byte s;

	shared = 1;
	s = xsleepers;
#ifndef MUTANT_NO_QUIESCE
	if
	:: atomic { s > 0 -> wake() }
	:: else
	fi
#endif
}

/* Runs only when nothing else can move. */
proctype monitor()
{
	timeout ->
	assert(!((asleep[0] || asleep[1]) &&
		 (count > 0 || shared)));
	assert(pending == 0)
}

init
{
	atomic {
		if
		:: pending = 0
		:: pending = 1	/* armed by an earlier write */
		fi;
		run napper(0);
		run napper(1);
		run writer();
		run cwriter();
		run timer();
		if
		:: skip
		:: run demoter()
		:: run sharer()
		fi;
		run monitor()
	}
}

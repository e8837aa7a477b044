/*
 * xnopoll.pml - NOPOLL of a ueventfd shared across fork (issue 35 item 4;
 * NOPOLL in src/eventfd_shared.c), for the spin model checker.  What
 * xmirror.pml checks for an exact shared ueventfd, here for one made with
 * UEVENTFD_NOPOLL, whose kernel fd nobody polls until some process ends
 * NOPOLL (a poll, a kernel epoll's ctl, a registration: uefd_watched_outside
 * then uefd__xexact).  Until then a change of the counter's class is made
 * under the robust lock xm but touches the kernel fd neither before nor
 * after its CAS; the holder asks `nopoll` after taking the lock.  The end:
 * store nopoll = 0, then settle under xm (a stopped holder bypassed: the fd
 * made readable if the counter is not 0, recheck set).
 * Three processes: a writer (two writes of 1: from 0, then from 0 again
 * or from 1), a reader (a blocking read, asleep on the futex word rwake
 * while the counter is 0), and the ender, which
 * ends NOPOLL at any step and then is the outsider that looks.  The killer
 * kills the writer or the reader at any step (a robust lock it holds is
 * released: ROBUST), or stops one of them (SIGSTOP) and maybe continues it.
 * Checked exhaustively:
 *  - once the end's settle returned (`synced`), at every step: count > 0 =>
 *    K > 0, but while a live holder that decided under NOPOLL is between
 *    its CAS and its settle (`hwin`: the write is not over; a poller that
 *    looks then looks before it), and but for xmirror.pml's windows once
 *    the writer or the reader bypassed a stopped holder (`bypassed`: a
 *    bypass's drain between another's raise and its own look again; then
 *    checked at rest);
 *  - at the end (after a death, the next operation's settle under the lock:
 *    ROBUST), with no process stopped: class(K) == class(count);
 *  - no blocked reader sleeps over a non-zero counter (the sleep's limit
 *    only after its waker died or stopped).
 * Non-semaphore, writes of 1 that never fill the counter (the fill is
 * xmirror.pml's); the bypasses of a stopped holder as in xmirror.pml, but
 * for the FILL accounting (no fill here).  What is left, as in
 * xmirror.pml: a holder stopped, continued and killed (not modelled: a
 * process both stopped and killed).
 * Each statement is one atomic step of the C code (a load, a store, a CAS,
 * one system call).
 * PAN_FLAGS: -E
 * Mutants that models/check.sh requires to fail (C twins in
 * tests/mutations/xmirror.txt):
 *   MUTANT_LOOK_OUTSIDE   the holder asks nopoll before taking the lock
 *   MUTANT_END_NO_RAISE   the end's bypass of a stopped holder does not
 *                         make the fd readable over a non-zero counter
 *   MUTANT_END_SYNC_FIRST the end settles, then stores nopoll = 0
 *   MUTANT_LOCKFREE       a write from 0 under NOPOLL is a lock-free CAS
 */
#define CLS(x)	((x) == 0 -> 0 : 1)

byte count;
byte K;
byte kf;
byte xlock;
byte dead;
byte stopped;
bit odied;
bit recheck;
bit nopoll;
bit synced;		/* ghost: the end's settle returned */
byte hwin;		/* ghost: pid of a holder between its CAS from 0, made
			 * under NOPOLL, and its settle's raise or unlock */
bit bypassed;		/* ghost: the writer or the reader bypassed a stopped
			 * holder (xmirror.pml's windows: checked at rest) */
bit sleeping;
byte xsl;
byte rwake;
bit tmo;
bit fin[4];

#define HWIN_OK	(hwin != 0 && hwin != dead && hwin != stopped)
#define INV	(!synced || count == 0 || K > 0 || HWIN_OK || bypassed)

inline kwrite(x) {
	K = K + x
}

/* non-blocking read(kfd) of a non-semaphore eventfd: all, or EAGAIN */
inline kread() {
	atomic { kv = K; K = 0 }
}

inline xfresh() {
	if
	:: atomic { recheck -> recheck = 0 }; kf = K
	:: atomic { !recheck -> skip }
	fi
}

/* The settle under xm: nothing under NOPOLL (asked at each round). */
inline lsync() {
	do
	:: atomic { nopoll -> skip }; break
	:: atomic { !nopoll -> skip };
		xfresh();
		c = count;
		if
		:: CLS(c) == CLS(kf) -> break
		:: c == 0 && kf > 0 ->
			kread();
			kf = (kv == 0 || kv >= kf -> 0 : kf - kv)
		:: c > 0 && kf == 0 ->
			kwrite(1);
			atomic { kf = 1; if :: hwin == me -> hwin = 0 :: else -> skip fi }
		fi
	od
}

inline repair() {
	kf = K;
	lsync()
}

inline lock(may, b) {
	b = 0;
	do
	:: atomic { xlock == 0 -> xlock = me; died = odied; odied = 0 } ->
		if
		:: died -> repair()
		:: else -> skip
		fi;
		break
	:: atomic { xlock != 0 -> t = xlock } ->
		if
		:: may && t == stopped ->
			atomic { b = 1; if :: me != 3 -> bypassed = 1 :: else -> skip fi };
			break
		:: else ->
			atomic { xlock != t || (may && t == stopped) -> t = 0 }
		fi
	od
}

inline unlock() {
	atomic { xlock = 0; if :: hwin == me -> hwin = 0 :: else -> skip fi };
	do
	:: recheck ->
		lock(1, byp2);
		if
		:: !byp2 -> lsync(); xlock = 0
		:: else -> break
		fi
	:: else -> break
	od
}

/* BYPASS: K readable if it is not. */
inline byraise() {
	if
	:: atomic { K == 0 -> skip }; kwrite(1)
	:: atomic { K > 0 -> skip }
	fi;
	recheck = 1
}

inline xowe() {
	recheck = 1;
	if
	:: atomic { xlock == 0 -> xlock = me; died = odied; odied = 0 } ->
		if
		:: died -> repair()
		:: else -> lsync()
		fi;
		unlock()
	:: atomic { xlock != 0 -> skip }
	fi
}

/* A write of 1. */
inline wr() {
	r = 0;
	do
	:: c = count;
		if
#ifdef MUTANT_LOCKFREE
		:: c == 0 && nopoll ->
			if
			:: atomic { count == c -> count = c + 1; r = 1 } -> break
			:: atomic { count != c -> skip }
			fi
#endif
		:: c >= 1 ->
			if
			:: atomic { count == c -> count = c + 1; r = 1 } -> break
			:: atomic { count != c -> skip }
			fi
		:: c == 0 ->
#ifdef MUTANT_LOOK_OUTSIDE
			np = nopoll;
#endif
			lock(1, byp);
			if
			:: byp ->
				recheck = 1;
				byraise();
				if
				:: atomic { count == c -> count = c + 1; r = 1 }
				:: atomic { count != c -> skip }
				fi;
				if
				:: r -> byraise()
				:: else -> skip
				fi;
				if
				:: r && xsl > 0 -> rwake = rwake + 1
				:: else -> skip
				fi;
				xowe()
			:: else ->
				c = count;
				xfresh();
#ifndef MUTANT_LOOK_OUTSIDE
				np = nopoll;
#endif
				if
				:: !np && c == 0 && kf == 0 -> kwrite(1); kf = 1
				:: else -> skip
				fi;
				if
				:: atomic { count == c -> count = c + 1; r = 1; from0 = (c == 0);
					if :: np && c == 0 -> hwin = me :: else -> skip fi }
				:: atomic { count != c -> skip }
				fi;
				lsync();
				unlock();
				if
				:: r && from0 && xsl > 0 -> rwake = rwake + 1
				:: else -> skip
				fi
			fi;
			if
			:: r -> break
			:: else -> skip
			fi
		fi
	od
}

/* A read that takes all (the counter is not 0 at its look, else r = 0). */
inline rd() {
	r = 0;
	do
	:: c = count;
		if
		:: c == 0 -> break
		:: else ->
			lock(1, byp);
			if
			:: byp ->
				recheck = 1;
				if
				:: atomic { count == c -> count = 0; r = 1 }
				:: atomic { count != c -> skip }
				fi;
				if
				:: r ->
					do
					:: kread();
						if
						:: kv == 0 -> break
						:: else -> skip
						fi
					od;
					recheck = 1;
					if
					:: count > 0 -> byraise()
					:: else -> skip
					fi
				:: else -> skip
				fi;
				xowe()
			:: else ->
				c = count;
				xfresh();
				if
				:: c > 0 ->
					if
					:: atomic { count == c -> count = 0; r = 1 }
					:: atomic { count != c -> skip }
					fi
				:: else -> skip
				fi;
				lsync();
				unlock()
			fi;
			if
			:: r -> break
			:: else -> skip
			fi
		fi
	od
}

proctype writer() provided (stopped != 1)
{
	byte me = 1;
	byte c, t, kv;
	bit r, byp, byp2, died, np, from0;

	{
		wr();
		wr();
		fin[me] = 1
	} unless { dead == me }
}

proctype reader() provided (stopped != 2)
{
	byte me = 2;
	byte c, t, kv, seq;
	bit r, byp, byp2, died;
	byte n = 0;

	{
		do
		:: n == 1 -> break
		:: n < 1 ->
			rd();
			if
			:: r -> n++
			:: else ->
				/* uefd__rsleep's xsync: nothing under NOPOLL */
				if
				:: !nopoll && (xlock != 0 || odied || recheck ||
					       CLS(count) != CLS(kf)) ->
					lock(1, byp);
					if
					:: byp -> recheck = 1
					:: else -> lsync(); unlock()
					fi
				:: else -> skip
				fi;
				seq = rwake;
				xsl = xsl + 1;
				if
				:: count > 0 -> skip
				:: else ->
					sleeping = 1;
end_sleep:				atomic { rwake != seq || (((dead != 0 && dead != 2) || (stopped != 0 && stopped != 2)) && !tmo) ->
						if
						:: rwake == seq -> tmo = 1
						:: else -> skip
						fi;
						sleeping = 0 }
				fi;
				xsl = xsl - 1
			fi
		od;
		fin[me] = 1
	} unless { dead == me }
}

/* NOPOLL's end (uefd_watched_outside, uefd__xexact), then the look. */
proctype ender()
{
	byte me = 3;
	byte c, t, kv;
	bit byp, byp2, died;

#ifndef MUTANT_END_SYNC_FIRST
	nopoll = 0;
#endif
	lock(1, byp);
	if
	:: byp ->
#ifndef MUTANT_END_NO_RAISE
		if
		:: count > 0 -> byraise()
		:: else -> skip
		fi;
#endif
		xowe()
	:: else ->
		lsync();
		unlock()
	fi;
#ifdef MUTANT_END_SYNC_FIRST
	nopoll = 0;
#endif
	synced = 1;
	fin[me] = 1
}

inline kill(p) {
	atomic {
		dead = p;
		if
		:: xlock == p -> xlock = 0; odied = 1
		:: else -> skip
		fi
	}
}

proctype killer()
{
	if
	:: kill(1)
	:: kill(2)
	:: stopped = 1; if :: stopped = 0 :: skip fi
	:: stopped = 2; if :: stopped = 0 :: skip fi
	:: skip
	fi
}

proctype invariant()
{
end:	atomic { !(INV) -> assert(false) }
}

proctype final()
{
	byte me = 4;
	byte c, kv, t;
	bit byp, byp2, died;

	timeout ->
	assert(fin[3]);
	assert(fin[1] || dead == 1 || stopped == 1);
	assert(fin[2] || dead == 2 || stopped == 2 || sleeping);
	if
	:: dead != 0 ->
		assert(xlock == 0);
		lock(0, byp); lsync(); unlock()
	:: else -> skip
	fi;
	assert(count == 0 || K > 0);
	if
	:: stopped == 0 -> assert(CLS(K) == CLS(count))
	:: else -> skip
	fi;
	assert(!(sleeping && dead != 2 && stopped != 2 && count > 0))
}

init
{
	atomic {
		nopoll = 1;
		/* (a stale unit left by MIRROR's NOPOLL before the fork, or
		 * none) */
		if
		:: K = 0; kf = 0
		:: K = 1; kf = 1
		fi;
		run writer();
		run reader();
		run ender();
		run killer();
		run invariant();
		run final()
	}
}

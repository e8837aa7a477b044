/*
 * turn.pml - FIFO thread order inside one instance (src/turn.c), for the
 * spin model checker.  Checked exhaustively for NT threads, each making
 * ROUNDS waits that may each be timed or not and may be hit by a signal:
 *  - exactly one thread holds the lead whenever the lead is taken: the
 *    threads running as leader plus the followers promoted but not yet
 *    running number exactly `leader` (0 or 1), so the lead is never lost
 *    nor held twice;
 *  - whenever the line is not empty, the lead is taken;
 *  - no event is stranded: if every thread is blocked while an event is
 *    ready, no thread may be waiting (they all finished);
 *  - the lead goes to the follower that joined the line first (by tickets
 *    taken on joining, independent of how the line is kept).
 * Each atomic block is one critical section of turn->lock (the handover's
 * eventfd write is made inside it, as in the C code); a follower's sleep is
 * ppoll on its eventfd, which ends by the write, a timeout or a signal.
 * The leader's port_wait is abstracted to: take an event, or time out, or
 * be interrupted (the doorbell protocol below it is doorbell.pml's).
 * models/check.sh also builds each mutant variant, which must fail:
 *   MUTANT_TIMEOUT_DROPS_LEAD  a follower promoted as its timeout fired
 *                              returns 0 instead of taking the lead;
 *   MUTANT_INTR_KEEPS_LEAD     a follower promoted as a signal came returns
 *                              EINTR without handing the lead on;
 *   MUTANT_HANDOVER_TO_TAIL    the lead goes to the newest follower;
 *   MUTANT_CANCEL_KEEPS_LEAD   a follower cancelled as it is promoted
 *                              leaves without passing the lead on;
 *   MUTANT_CANCEL_NO_HANDOVER  a leader cancelled in its wait leaves
 *                              without handing over.
 * Cancellation (pthread_cancel of a thread blocked in the wait, turn.c
 * CANCELLATION): a follower may be cancelled in its sleep and a leader in
 * its port_wait; the thread then runs the cleanup handler and is gone (no
 * more rounds).  Only thread 0 is cancelled (as leader or as follower,
 * whichever it is then), which keeps the state space near its size
 * without cancellation.
 */
#define NT 3
#define ROUNDS 2
#define NEV 1

#define IDLE 0
#define FOLLOW 1
#define LEAD 2

bit leader;
byte line[NT];
byte nline;
bit promoted[NT];
bit efd[NT];
byte role[NT];
byte events;
byte consumed;
/* FIFO order, checked against tickets taken on joining the line (not
 * against the line itself): the lead goes to the lowest ticket waiting. */
byte ticket;
byte tk[NT];

/* Lead holders: running leaders plus promoted followers not yet running. */
#define HOLDERS ((role[0] == LEAD) + (role[1] == LEAD) + (role[2] == LEAD) + \
	(role[0] == FOLLOW && promoted[0]) + (role[1] == FOLLOW && promoted[1]) + \
	(role[2] == FOLLOW && promoted[2]))
#define WAITING (role[0] != IDLE || role[1] != IDLE || role[2] != IDLE)

/* turn__handover, under the lock. */
inline handover(me) {
	atomic {
		if
		:: nline == 0 -> leader = 0
		:: else ->
#ifdef MUTANT_HANDOVER_TO_TAIL
			j = line[nline - 1];
#else
			j = line[0];
			k = 0;
			do
			:: k + 1 < nline -> line[k] = line[k + 1]; k++
			:: else -> break
			od;
#endif
			nline--;
			k = 0;
			do
			:: k < NT ->
				assert(k == j || role[k] != FOLLOW || promoted[k] ||
				       tk[k] > tk[j]);
				k++
			:: else -> break
			od;
			promoted[j] = 1;
			efd[j] = 1;
			tk[j] = 0;
			line[nline] = 0
		fi;
		/* Only the relative order of tickets matters: restart them
		 * when the line empties (a smaller state space). */
		if
		:: nline == 0 -> ticket = 0
		:: else
		fi;
		role[me] = IDLE
	}
}

/* A follower leaves the line by itself, under the lock. */
inline leave(me) {
	k = 0;
	do
	:: line[k] == me -> break
	:: else -> k++
	od;
	do
	:: k + 1 < nline -> line[k] = line[k + 1]; k++
	:: else -> break
	od;
	nline--;
	line[nline] = 0;
	tk[me] = 0;
	if
	:: nline == 0 -> ticket = 0
	:: else
	fi;
	role[me] = IDLE
}

proctype thread(byte me)
{
	byte round = 0, j, k;
	bit timed, cancelled;
	byte lead;

	do
	:: round < ROUNDS ->
		round++;
		if
		:: timed = 1
		:: timed = 0
		fi;
		lead = 0;
		atomic {
			if
			:: leader == 0 -> leader = 1; role[me] = LEAD; lead = 1
			:: else ->
				line[nline] = me; nline++;
				ticket++; tk[me] = ticket;
				promoted[me] = 0; efd[me] = 0;
				role[me] = FOLLOW
			fi
		}
		if
		:: lead == 0 ->
endf:			if
			:: efd[me] -> atomic { efd[me] = 0; promoted[me] = 0; role[me] = LEAD }; lead = 1
			:: timed ->
				atomic {
					if
					:: promoted[me] ->
#ifdef MUTANT_TIMEOUT_DROPS_LEAD
						promoted[me] = 0; role[me] = IDLE
#else
						promoted[me] = 0; role[me] = LEAD; lead = 1
#endif
					:: else -> leave(me)
					fi
				}
			:: true -> /* a signal handler ran */
				atomic {
					if
					:: promoted[me] ->
						promoted[me] = 0;
#ifdef MUTANT_INTR_KEEPS_LEAD
						role[me] = IDLE
#else
						role[me] = LEAD; lead = 2 /* hand on, EINTR */
#endif
					:: else -> leave(me)
					fi
				}
			:: me == 0 -> /* cancelled: turn__cancelled */
				cancelled = 1;
				atomic {
					if
					:: promoted[me] ->
						promoted[me] = 0;
#ifdef MUTANT_CANCEL_KEEPS_LEAD
						role[me] = IDLE
#else
						role[me] = LEAD; lead = 2 /* turn__pass */
#endif
					:: else -> leave(me)
					fi
				}
			fi
		:: else
		fi;
		if
		:: lead == 1 ->
endl:			if
			:: atomic { events > 0 -> events--; consumed++ }
			:: timed
			:: true /* EINTR */
			:: me == 0 -> /* cancelled: the handover is a cleanup
					* handler */
				cancelled = 1;
#ifdef MUTANT_CANCEL_NO_HANDOVER
				atomic { role[me] = IDLE };
				goto gone
#endif
			fi;
			handover(me)
		:: lead == 2 -> handover(me)
		:: else
		fi;
		if
		:: cancelled -> break
		:: else
		fi
	:: else -> break
	od;
gone:	skip
}

active proctype producer()
{
	byte n = 0;

	do
	:: n < NEV -> events++; n++
	:: else -> break
	od
}

/* The safety properties, checked in every reachable state. */
active proctype monitor()
{
	assert(HOLDERS == leader && (nline == 0 || leader == 1))
}

/* When nothing can move: an event may be left only if nobody waits. */
active proctype stranded()
{
	timeout -> assert(events == 0 || !WAITING)
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run thread(2)
	}
}

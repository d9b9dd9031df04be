/* SPDX-License-Identifier: MIT */
/*
 * examples/keyd under attack.  With the keys in a malloc()ed block the
 * attack client recovers the signing key through the Heartbleed over-read;
 * with the keys in an mpkit vault the over-read faults, the fault report
 * names domain "keyd-key", only that connection ends, no key byte leaves
 * the daemon, and it serves 10,000 requests from 8 threads with attacks
 * mixed in, every good reply verified.
 */
#include "t_ex.h"
#include "../examples/keyd/proto.h"

struct daemon {
	pid_t pid;
	char *out, *err, port[16];
};

static const char *key_file;
static struct keyd_keys keys;

static void start(struct daemon *d, bool plain)
{
	char *argv[] = { (char *)t_ex_path("keyd"), "--key-file", (char *)key_file,
			 plain ? "--plain" : NULL, NULL };

	d->out = t_ex_tmp("keyd-out");
	d->err = t_ex_tmp("keyd-err");
	d->pid = t_ex_spawn(argv, d->out, d->err);
	for (int i = 0; i < 3000; i++) { /* 30 s: the VM is slow */
		char *text = t_ex_slurp(d->out, NULL), *p = strstr(text, "127.0.0.1:");
		if (p && strchr(p, '\n')) {
			snprintf(d->port, sizeof(d->port), "%d", atoi(p + 10));
			free(text);
			return;
		}
		free(text);
		REQUIRE(waitpid(d->pid, NULL, WNOHANG) == 0);
		usleep(10000);
	}
	REQUIRE(!"keyd did not start");
}

/* SIGTERM; returns its stdout, shows both outputs; *err gets stderr. */
static char *stop(struct daemon *d, char **err)
{
	REQUIRE(kill(d->pid, 0) == 0); /* it is still serving */
	kill(d->pid, SIGTERM);
	CHECK(t_ex_wait(d->pid) == 0);
	char *out = t_ex_slurp(d->out, NULL);
	*err = t_ex_slurp(d->err, NULL);
	t_ex_show("keyd", out);
	t_ex_show_some("keyd stderr", *err, 6);
	unlink(d->out), unlink(d->err);
	free(d->out), free(d->err);
	return out;
}

/* Key bytes found in the file: those covered by an 8-byte run of either
 * key (the signing key's 64 bytes, the box key's 32) in the dump. */
static int leaked(const char *dump)
{
	size_t n;
	char *p = t_ex_slurp(dump, &n);
	const unsigned char *key[2] = { keys.sign_sk, keys.box_key };
	size_t len[2] = { 64, 32 };
	int count = 0;

	for (int k = 0; k < 2; k++) {
		bool hit[64] = { false };
		for (size_t i = 0; i + 8 <= len[k]; i++)
			if (memmem(p, n, key[k] + i, 8))
				memset(hit + i, 1, 8);
		for (size_t i = 0; i < len[k]; i++)
			count += hit[i];
	}
	free(p);
	return count;
}

static int attack(struct daemon *d, const char *dump, char **out)
{
	char *argv[] = { (char *)t_ex_path("attack"), "--dump", (char *)dump, d->port, NULL };
	return t_ex_run(argv, out, NULL);
}

static void plain_build(void)
{
	struct daemon d;
	char *out, *err, *dump = t_ex_tmp("dump");

	printf("== keys in a malloc()ed block (keyd --plain)\n");
	start(&d, true);
	CHECK(attack(&d, dump, &out) == 0); /* 0: recovered */
	CHECK(strstr(out, "SIGNING KEY") && strstr(out, "forged signature verifies"));
	int n = leaked(dump);
	printf("plain: key bytes leaked %d of 96\n", n);
	CHECK(n >= 64);
	free(out);
	free(stop(&d, &err));
	free(err);
	unlink(dump);
	free(dump);
}

static void vault_build(void)
{
	struct daemon d;
	char *out, *err, *dump = t_ex_tmp("dump");
	char *load[] = { (char *)t_ex_path("attack"), "--load", "10000", "--threads", "8",
			 "--key-file", (char *)key_file, "--attack-every", "50", NULL, NULL };
	int search = 0, cut = 0, attacks = 0, good = 0, correct = 0, lost = -1, wrong = -1;

	printf("== keys in an mpkit vault (keyd)\n");
	start(&d, false);
	CHECK(attack(&d, dump, &out) == 1); /* 1: not recovered */
	for (char *p = out; (p = strstr(p, "attack: N=")); p++)
		search++;
	for (char *p = out; (p = strstr(p, "connection cut")); p++)
		cut++;
	CHECK(cut >= 1);
	CHECK(strstr(out, "key not recovered") != NULL);
	int n = leaked(dump);
	printf("vault: key bytes leaked %d\n", n);
	CHECK(n == 0);
	free(out);

	/* The same daemon serves on: load with attacks mixed in. */
	load[9] = d.port;
	CHECK(t_ex_run(load, &out, NULL) == 0);
	char *p = strstr(out, "threads: ");
	CHECK(p && sscanf(p, "threads: %d good (%*d signatures, %*d encryptions): %d correct,"
			     " %d wrong, %d lost", &good, &correct, &wrong, &lost) == 4);
	p = strstr(out, "load: ");
	p = p ? strstr(p + 1, "load: ") : NULL;
	int lcut = -1, answered = -1;
	CHECK(p && sscanf(p, "load: %d attack requests: %d cut, %d answered", &attacks,
			  &lcut, &answered) == 3);
	CHECK(good + attacks == 10000 && attacks == 200);
	CHECK(correct == good && wrong == 0 && lost == 0);
	CHECK(lcut == attacks && answered == 0);
	free(out);

	char *dout = stop(&d, &err);
	unsigned long faults = 0;
	p = strstr(dout, "connections, ");
	CHECK(p && sscanf(p, "connections, %lu ended", &faults) == 1);
	CHECK(faults == (unsigned long)(cut + attacks)); /* one per cut connection */
	CHECK(strstr(err, "read of domain \"keyd-key\"") != NULL);
	CHECK(strstr(err, t_backend() == MPK_BACKEND_HW ? "SEGV_PKUERR" : "SEGV_ACCERR"));
	printf("vault: %d load requests (%d of them over-reads) and %d attack-client"
	       " requests (%d cut); %lu connections ended by faults; %d good replies, all"
	       " correct; key bytes leaked %d\n", good + attacks, attacks, search, cut, faults,
	       correct, n);
	free(dout);
	free(err);
	unlink(dump);
	free(dump);
}

int main(void)
{
	unsigned char seed[32];

	setvbuf(stdout, NULL, _IOLBF, 0);
	REQUIRE(sodium_init() >= 0);
	t_backend();
	randombytes_buf(seed, sizeof(seed));
	keyd_derive(seed, &keys);
	char *kf = t_ex_tmp("seed");
	FILE *f = fopen(kf, "wb");
	REQUIRE(f && fwrite(seed, 1, 32, f) == 32 && fclose(f) == 0);
	key_file = kf;

	plain_build();
	vault_build();
	unlink(kf);
	free(kf);
	return t_done();
}

/* The node's pause image: holds a pod's namespaces, reaps orphans, exits on SIGINT/SIGTERM.
 * Built static (`gcc -static`) by scripts/test-images; it stands in for registry.k8s.io/pause. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int signal) { (void)signal; _exit(0); }

static void reap(int signal) {
  (void)signal;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = quit};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGCHLD, &child, NULL);
  for (;;) {
    pause();
  }
  return EXIT_FAILURE;
}

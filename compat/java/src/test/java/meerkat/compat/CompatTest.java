package meerkat.compat;

import org.junit.jupiter.api.extension.ExtendWith;

/** Base of the scenario classes: brings up the shared server pair once per run. */
@ExtendWith(Servers.class)
abstract class CompatTest {
}

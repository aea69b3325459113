/**
 * Preloaded into a gateway process a test starts (`--import`): every host name resolves to the loopback address
 * in MGW_TEST_STANDIN_ADDRESS (e.g. 127.0.0.2), and that address alone is let through the SSRF checks, so that
 * a loopback server can play a public media host for a gateway running as its own process (the in-process
 * tests do the same with `setNetworkDefaults` directly: test/integration/ssrf-matrix-world.ts). Without the
 * variable nothing changes.
 */
import { setNetworkDefaults } from '../../src/media/ssrf.js';

const address = process.env.MGW_TEST_STANDIN_ADDRESS;
if (address) setNetworkDefaults({ resolver: () => Promise.resolve([{ address, family: 4 }]), allowAddress: (a) => a === address });

// toxy's own benchmark suites (benchmark/suites/*.js in toxy 0.3), with the
// ports given as arguments and nginx as the target:
//   node toxy-suite.js SUITE LISTEN_PORT TARGET_URL
// SUITE: forward | payload | bandwidth | slow-read. Run by bench/toxy.sh
// with node 14 (toxy 0.3 predates node 16).
const toxy = require('toxy')
const [suite, port, target] = process.argv.slice(2)
const timeout = 30 * 1000
const proxy = toxy({ timeout: timeout, proxyTimeout: timeout }).forward(target)
const route = proxy.all('*')
if (suite === 'bandwidth') route.poison(toxy.poisons.bandwidth({ bps: 1024 }))
if (suite === 'slow-read') route.poison(toxy.poisons.slowRead({ bps: 1024 }))
proxy.listen(+port, '127.0.0.1')

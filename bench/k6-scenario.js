// The benchmark's two-step scenario for k6 (bench/run.sh scenario): the
// same sequence as bench/scenario.toml. BASE is the server's URL without
// the trailing slash; VUS and DURATION as for versus.
import http from 'k6/http';

export const options = {
  vus: Number(__ENV.VUS || 50),
  duration: __ENV.DURATION || '5s',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(99)'],
};

export default function () {
  const first = http.get(`${__ENV.BASE}/`);
  const result = first.json('result');
  http.get(`${__ENV.BASE}/?r=${result}`);
}

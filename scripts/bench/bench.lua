-- bench.lua -- wrk script used by every wrk run of the suite.
--
-- * If BENCH_MIX is set ("/path:weight,/path:weight,..."), each request picks
--   a path at random by weight (workload d, the WebSTONE mix). The generator
--   is seeded with a constant, so runs are repeatable. Otherwise no request()
--   is defined and wrk keeps its fast static request.
-- * done() prints one machine-readable line that workloads.sh parses:
--   BENCH requests=.. duration_us=.. bytes=.. err_connect=.. err_read=..
--         err_write=.. err_status=.. err_timeout=.. lat_mean_us=..
--         lat_p50_us=.. lat_p99_us=.. lat_max_us=..
-- * If BENCH_NO_HOST is set, every request is an HTTP/1.1 GET of the URL's
--   path without the Host header that HTTP/1.1 requires (workload f).
-- * If BENCH_EXPECT_STATUS is set, replies with that status are counted and
--   done() adds matched=.. to the BENCH line (wrk itself counts every
--   non-2xx/3xx reply as an error).

local mix = os.getenv("BENCH_MIX")
local expect = tonumber(os.getenv("BENCH_EXPECT_STATUS") or "")
local threads = {}

if os.getenv("BENCH_NO_HOST") then
   local req
   function init(args)
      req = "GET " .. wrk.path .. " HTTP/1.1\r\nUser-Agent: wrk\r\n\r\n"
   end
   function request() return req end
end

if expect then
   matched = 0     -- per thread; done() sums them through setup()'s list
   function setup(thread) threads[#threads + 1] = thread end
   function response(status, headers, body)
      if status == expect then matched = matched + 1 end
   end
end

if mix and mix ~= "" then
   local paths, cum, total = {}, {}, 0
   for p, w in string.gmatch(mix, "([^,:]+):(%d+)") do
      total = total + tonumber(w)
      paths[#paths + 1] = p
      cum[#cum + 1] = total
   end
   local reqs = {}

   function init(args)
      -- formatted here, not at load time: wrk adds the Host header to
      -- wrk.headers only after the script is loaded.
      for i, p in ipairs(paths) do reqs[i] = wrk.format(nil, p) end
      math.randomseed(20030601)
   end

   function request()
      local r = math.random(total)
      for i = 1, #cum do
         if r <= cum[i] then return reqs[i] end
      end
      return reqs[#reqs]
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   local m = ""
   if expect then
      local n = 0
      for _, t in ipairs(threads) do n = n + t:get("matched") end
      m = string.format(" matched=%d", n)
   end
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d err_connect=%d err_read=%d " ..
      "err_write=%d err_status=%d err_timeout=%d lat_mean_us=%.1f " ..
      "lat_p50_us=%d lat_p99_us=%d lat_max_us=%d",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read,
      e.write, e.status, e.timeout, latency.mean, latency:percentile(50),
      latency:percentile(99), latency.max) .. m .. "\n")
end

pg_ctest_list(names "${BUILD}")
pg_expect_set("ctest -N names" "${names}" nested/contract nested/composition
              nested/workers/start nested/workers/stop nested/M1/L2/n1 nested/M1/L1/n2 nested/report/session)

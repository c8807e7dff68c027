module github.com/sundialhq/sundial

go 1.26.8

require github.com/robfig/cron/v3 v3.0.1 // indirect

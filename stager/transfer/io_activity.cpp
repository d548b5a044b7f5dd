#include "stager/transfer/io_activity.hpp"

#include <algorithm>
#include <cstdio>

namespace dlstage::stager {

void IoActivity::start(Clock::time_point now)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    reading_ = writing_ = 0;
    seconds_ = {};
    last_ = now;
}

void IoActivity::account(Clock::time_point now)
{
    const double elapsed = now > last_ ? std::chrono::duration<double>(now - last_).count() : 0.0;
    if (reading_ > 0)
        seconds_.reading += elapsed;
    if (writing_ > 0)
        seconds_.writing += elapsed;
    if (reading_ > 0 && writing_ > 0)
        seconds_.both += elapsed;
    last_ = std::max(last_, now);
}

void IoActivity::begin(Io kind, Clock::time_point now)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    account(now);
    ++(kind == Io::Reading ? reading_ : writing_);
}

void IoActivity::end(Io kind, Clock::time_point now)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    account(now);
    int& count = kind == Io::Reading ? reading_ : writing_;
    if (count > 0)  // an end after start() forgot its begin
        --count;
}

IoSeconds IoActivity::seconds(Clock::time_point now)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    account(now);
    return seconds_;
}

IoActivity& stage_io()
{
    static IoActivity activity;
    return activity;
}

std::string io_text(const IoSeconds& seconds)
{
    char text[128];
    std::snprintf(text, sizeof text, "reading %.2f s, writing %.2f s, both at once %.2f s", seconds.reading,
                  seconds.writing, seconds.both);
    return text;
}

}  // namespace dlstage::stager
